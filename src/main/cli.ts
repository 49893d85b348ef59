#!/usr/bin/env node
/**
 * The `keepwork` command. Sub-commands are registered here and implemented in their own modules.
 */
import { Command, InvalidArgumentError } from 'commander';
import { DEFAULT_BUCKET_URL, openStore } from '../store/open.js';
import { createLogger } from '../core/logger.js';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

const program = new Command('keepwork').description('a durable-actor runtime for Node.js').showHelpAfterError();

program
  .command('start')
  .description('run a node (the embedded default: ./data with a folder bucket)')
  .option('--data <dir>', 'data directory', './data')
  .option('--bucket <url>', 'bucket URL: file://…, a path, or s3://bucket/prefix?endpoint=…', DEFAULT_BUCKET_URL)
  .option('--port <n>', 'HTTP port (0 picks a free one)', positiveInt, 8080)
  .action(async (opts: { data: string; bucket: string; port: number }) => {
    const log = createLogger({ base: { component: 'cli' } });
    const store = openStore(opts.bucket);
    const page = await store.list({ maxKeys: 1 });
    log.info({ bucket: store.description, data: opts.data, empty: page.keys.length === 0 }, 'keepwork node shell started (the actor runtime is not built yet); Ctrl-C stops it');
    await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
    await store.close();
    log.info('stopped');
  });

program.parseAsync().catch((e: unknown) => {
  console.error(`keepwork: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
