/**
 * One keepwork node for bench/peers, as its own process (so the bench can kill -9 it): forked with
 * an IPC channel and `DATA_DIR PORT [name=value ...]` arguments (the last: tunables), it starts a node through the public API with a
 * folder bucket in DATA_DIR/bucket (`bucket=sqlite`: the SQLite bucket DATA_DIR/bucket.db) and the bench's Counter and Reminder,
 * then sends { url }.
 * Logs (warn and up) go to stdout, which the bench sends to a file.
 */
import { join } from 'node:path';
import { createLogger, startNode } from '../../../src/index.js';
import { setPairs } from '../../lib.js';

const [dataDir, port, ...args] = process.argv.slice(2);
const pairs = args.map((t) => t.split('='));
const sqlite = pairs.some(([name, value]) => name === 'bucket' && value === 'sqlite');
const settings = setPairs(args.filter((t) => !t.startsWith('bucket=')));
const node = await startNode({
  ...settings,
  dataDir: join(dataDir!, 'node'),
  bucket: sqlite ? `sqlite:${join(dataDir!, 'bucket.db')}` : join(dataDir!, 'bucket'),
  nodeId: 'bench',
  port: Number(port),
  host: '127.0.0.1',
  classes: {
    Counter: new URL('./counter.ts', import.meta.url).href,
    Reminder: new URL('./reminder.ts', import.meta.url).href,
  },
  logger: createLogger({ level: 'warn' }),
});
process.send!({ url: node.url });
process.on('SIGTERM', () => void node.stop().then(() => process.exit(0)));
