/**
 * Coded errors at the node's boundaries, through real nodes (Piscina workers, a folder bucket):
 * a corrupt delta in the bucket reaches the library caller and the HTTP client as CORRUPT_LINK,
 * and a handler's failure keeps the handler's own stack across the worker boundary, into the
 * library's rejection and the node's log line.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { encodeLink } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { openStore } from '../../src/store/open.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const PROBE_FILE = /fixtures\/classes\/probe\.ts:\d+/;
const dir = tempDirs('kw-http-errors-');

describe('coded errors through a real node', () => {
  const bucket = join(dir(), 'bucket');
  const { log, lines } = capturedLogger('info');
  let node: KeepworkNode;
  const start = (logger = silentLogger()) =>
    startNode({ dataDir: dir(), bucket, classes: { Probe: PROBE }, port: 0, workerThreads: 1, logger });

  before(async () => {
    // One node writes the actor's snapshot and stops (its hold released); a link 2 is planted
    // whose seal holds but whose delta payload is not a delta; another node then takes the actor.
    const writer = await start();
    await writer.actor('t1/Probe/c').call('slowIncrement', 0);
    await writer.stop();
    const fields = { seq: 2, kind: 'delta' as const, generation: 1, nodeId: 'n9', epoch: 1, atMs: 0, pageSize: 4096, pageCount: 2 };
    const body = encodeLink(fields, new TextEncoder().encode('this payload is not a page delta'));
    await openStore(bucket).put(linkKey(parseAddress('t1/Probe/c'), 2), body, { ifNoneMatch: '*' });
    node = await start(log);
  });
  after(() => node?.stop());

  it('a corrupt delta: the library call rejects with CORRUPT_LINK, HTTP answers 500 {"error":"CORRUPT_LINK"}', async () => {
    await assert.rejects(node.actor('t1/Probe/c').call('value'), (e: unknown) => isKeepworkError(e, ErrorCode.CorruptLink));
    const r = await fetch(`${node.url}/v1/actors/t1/Probe/c/value`, {
      method: 'POST',
      body: '[]',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(r.status, 500);
    const json = (await r.json()) as { error: string; message: string };
    assert.equal(json.error, 'CORRUPT_LINK');
    assert.match(json.message, /not the magic "KWPD"/);
  });

  it('a throwing handler: the rejection and the node’s log line carry the handler’s stack', async () => {
    await assert.rejects(
      node.actor('t1/Probe/f').call('fail', 'thrown by the handler'),
      (e: unknown) => isKeepworkError(e, ErrorCode.HandlerFailed) && PROBE_FILE.test((e as unknown as Error).stack ?? ''),
    );
    const r = await fetch(`${node.url}/v1/actors/t1/Probe/f/fail`, {
      method: 'POST',
      body: '["over HTTP"]',
      headers: { 'content-type': 'application/json' },
    });
    assert.deepEqual(await r.json(), { error: 'HANDLER_FAILED', message: 'over HTTP' });
    const line = lines.find((l) => l.msg === 'request failed' && l.err?.message === 'over HTTP');
    assert.ok(line, 'the 500 is logged');
    assert.match(line.err?.stack ?? '', PROBE_FILE);
  });
});
