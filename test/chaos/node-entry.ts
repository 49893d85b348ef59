/**
 * One node of the chaos run: `startNode` as `keepwork start` runs it, plus the TEST-ONLY seams
 * (`UnsafeTestSeams`, src/main/node-api.ts) that plant one protocol breakage, so a run can show
 * its checker catches it. It prints the CLI's `(epoch N) serving URL` line and stops on SIGTERM.
 *
 *   tsx test/chaos/node-entry.ts '<json: StartNodeOptions without logger>' [earlyDurableReply | noFence | leaseOverstay]
 */
import { SAFE_RULES, type ProtocolRules } from '../../src/alarms/rules.js';
import { createLogger } from '../../src/core/logger.js';
import { startHttp } from '../../src/http/server.js';
import type { StartNodeOptions, UnsafeTestSeams } from '../../src/main/node-api.js';
import { startNodeWith } from '../../src/main/start-node.js';
import { UNSAFE, type Unsafe } from './plan.js';

const off = (rule: keyof ProtocolRules): ProtocolRules => Object.freeze({ ...SAFE_RULES, [rule]: false });

/** What each planted breakage hands the node. */
export const SEAMS: Readonly<Record<Unsafe, UnsafeTestSeams>> = {
  earlyDurableReply: { rules: off('durableReplyAfterUpload') },
  noFence: { rules: off('ownerFence') },
  // Longer than any planned pause: a resumed node still believes its lease (and holds) valid.
  leaseOverstay: { leaseOverstayMs: 10_000 },
};

const [json, unsafe] = process.argv.slice(2);
if (!json || (unsafe !== undefined && !(UNSAFE as readonly string[]).includes(unsafe))) {
  console.error(`usage: node-entry.ts '<options json>' [${UNSAFE.join(' | ')}]`);
  process.exit(2);
}
const options = JSON.parse(json) as StartNodeOptions;
const node = await startNodeWith({ ...options, logger: createLogger() }, startHttp, unsafe ? SEAMS[unsafe as Unsafe] : {});
console.error(`keepwork node ${node.nodeId} (epoch ${node.epoch}) serving ${node.url}${unsafe ? ` UNSAFE ${unsafe}` : ''}`);
await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
await node.stop();
