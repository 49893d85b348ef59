/**
 * One node of the chaos run: `startNode` as `keepwork start` runs it, plus the TEST-ONLY seams
 * (`UnsafeTestSeams`, src/main/node-api.ts) the run's faults and planted breakages need. It prints
 * the CLI's `(epoch N) serving URL` line and stops on SIGTERM.
 *
 *   tsx test/chaos/node-entry.ts '<json: StartNodeOptions without logger>' '<json: EntrySeams>'
 *
 *   unsafe         one protocol breakage (plan.ts UNSAFE: a rule of ProtocolRules off, or a lease
 *                  overstay); the run's skewBeyondBound needs no seam of its own (a clock offset
 *                  past the bound)
 *   clockOffsetMs  the node's clock reads this much ahead of the machine's (negative: behind)
 *   cutDir         a forward to a node whose port has a file `peer-<port>` here gets no answer
 *                  (a partition between the two nodes, switched by the harness)
 */
import { existsSync } from 'node:fs';
import { SAFE_RULES, type ProtocolRules } from '../../src/alarms/rules.js';
import { createLogger } from '../../src/core/logger.js';
import { startHttp } from '../../src/http/server.js';
import type { StartNodeOptions, UnsafeTestSeams } from '../../src/main/node-api.js';
import { startNodeWith } from '../../src/main/start-node.js';
import { peerCutFile } from './cuts.js';
import { UNSAFE, type Unsafe } from './plan.js';

export interface EntrySeams {
  unsafe?: Unsafe;
  clockOffsetMs?: number;
  cutDir?: string;
}

const off = (rule: keyof ProtocolRules): ProtocolRules => Object.freeze({ ...SAFE_RULES, [rule]: false });

/** What each planted breakage hands the node. */
export const SEAMS: Readonly<Record<Unsafe, UnsafeTestSeams>> = {
  earlyDurableReply: { rules: off('durableReplyAfterUpload') },
  noFence: { rules: off('ownerFence') },
  // Longer than any planned pause: a resumed node still believes its lease (and holds) valid.
  leaseOverstay: { leaseOverstayMs: 10_000 },
  // The offset itself (nodes.ts): one node's clock far ahead of the others'.
  skewBeyondBound: {},
  noGenerationCheck: { rules: off('generationCheck') },
  uploadBeforeEntry: { rules: off('entryBeforeUpload') },
  deleteBeforeUpload: { rules: off('deleteAfterUpload') },
  skipIdempotencyRecord: { rules: off('idempotencyRecord') },
};

const [json, seamsJson] = process.argv.slice(2);
const entry = seamsJson ? (JSON.parse(seamsJson) as EntrySeams) : {};
if (!json || (entry.unsafe !== undefined && !(UNSAFE as readonly string[]).includes(entry.unsafe))) {
  console.error(`usage: node-entry.ts '<options json>' '{"unsafe":"${UNSAFE.join(' | ')}","clockOffsetMs":N,"cutDir":"…"}'`);
  process.exit(2);
}
const options = JSON.parse(json) as StartNodeOptions;
const cutDir = entry.cutDir;
const seams: UnsafeTestSeams = {
  ...(entry.unsafe ? SEAMS[entry.unsafe] : {}),
  ...(entry.clockOffsetMs ? { clockOffsetMs: entry.clockOffsetMs } : {}),
  ...(cutDir ? { forwardDropped: (url: string) => existsSync(peerCutFile(cutDir, url)) } : {}),
};
const node = await startNodeWith({ ...options, logger: createLogger() }, startHttp, seams);
const skew = entry.clockOffsetMs ? ` clock ${entry.clockOffsetMs > 0 ? '+' : ''}${entry.clockOffsetMs} ms` : '';
console.error(
  `keepwork node ${node.nodeId} (epoch ${node.epoch}) serving ${node.url}${entry.unsafe ? ` UNSAFE ${entry.unsafe}` : ''}${skew}`,
);
await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
await node.stop();
