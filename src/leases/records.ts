/**
 * The two ownership records in the bucket (docs/architecture.md) — keys, bodies and their checks, the
 * only module that builds or parses them:
 *
 *   nodes/<nodeId>                     {"nodeId":"n1","epoch":4,"addr":"http://127.0.0.1:8081",
 *                                        "tenants":null,"classes":["Counter"],"expiresAtMs":…,"state":"live"}
 *   holds/<tenant>/<class>/<name hex>  {"nodeId":"n1","epoch":4,"generation":17,"state":"held"}
 */
import { nameHex, type ActorAddress } from '../core/address.js';
import { BadRequest } from '../core/errors.js';

export type NodeState = 'live' | 'released' | 'fenced';
export type HoldState = 'held' | 'released';

export interface NodeRecord {
  nodeId: string;
  epoch: number;
  addr: string;
  /** Tenants served; null for all. */
  tenants: string[] | null;
  classes: string[];
  expiresAtMs: number;
  state: NodeState;
  /** The node's data dir (its random name, node.json): a restart on it may fence this record at once. */
  dataDirId?: string;
  /** The lease settings the node runs with (so tools can judge its record without guessing). */
  leasePeriodMs?: number;
  graceMs?: number;
}

export interface HoldRecord {
  nodeId: string;
  epoch: number;
  generation: number;
  state: HoldState;
}

export const NODES_PREFIX = 'nodes/';
export const HOLDS_PREFIX = 'holds/';

export const nodeKey = (nodeId: string) => NODES_PREFIX + nodeId;
export const holdKey = (a: ActorAddress) => `${HOLDS_PREFIX}${a.tenant}/${a.className}/${nameHex(a.name)}`;

export function nodeIdOfKey(key: string): string | undefined {
  return key.startsWith(NODES_PREFIX) && !key.slice(NODES_PREFIX.length).includes('/') ? key.slice(NODES_PREFIX.length) : undefined;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

export const encodeNode = (r: NodeRecord): Uint8Array => enc(r);
export const encodeHold = (r: HoldRecord): Uint8Array => enc(r);

function parse(body: Uint8Array, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(new TextDecoder().decode(body)) as unknown;
    if (typeof v === 'object' && v !== null) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new BadRequest(`${what} record is not a JSON object`);
}

const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Why `addr` cannot be a node's address, or undefined when it can: an http or https URL with a
 * host, a port if not the scheme's, and nothing after them (no path, query, fragment or
 * credentials). The bucket is not trusted with where calls go: a planted record must not aim a
 * forward at another service.
 */
export function nodeAddrProblem(addr: string): string | undefined {
  let u: URL;
  try {
    u = new URL(addr);
  } catch {
    return 'not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `scheme ${u.protocol} (http or https only)`;
  if (!u.hostname) return 'no host';
  if (!/^[a-z]+:\/\/[^/?#]*\/?$/i.test(addr)) return 'nothing may follow the host and port';
  if (u.username || u.password) return 'credentials in the URL';
  return undefined;
}

/** A node record; an `addr` that is not a node's address (nodeAddrProblem) reads as none: calls held there are not forwarded. */
export function decodeNode(body: Uint8Array): NodeRecord {
  const r = parse(body, 'node');
  const ok =
    typeof r.nodeId === 'string' &&
    int(r.epoch) &&
    typeof r.addr === 'string' &&
    (r.tenants === null || Array.isArray(r.tenants)) &&
    Array.isArray(r.classes) &&
    int(r.expiresAtMs) &&
    (r.state === 'live' || r.state === 'released' || r.state === 'fenced');
  if (!ok) throw new BadRequest('node record has missing or invalid fields');
  if (r.addr !== '' && nodeAddrProblem(r.addr as string) !== undefined) return { ...(r as unknown as NodeRecord), addr: '' };
  return r as unknown as NodeRecord;
}

/** The `addr` a node record carries that decodeNode refused (nodeAddrProblem), with why; undefined when it has none. */
export function refusedAddr(body: Uint8Array): { addr: string; problem: string } | undefined {
  const addr = parse(body, 'node').addr;
  if (typeof addr !== 'string' || addr === '') return undefined;
  const problem = nodeAddrProblem(addr);
  return problem === undefined ? undefined : { addr, problem };
}

export function decodeHold(body: Uint8Array): HoldRecord {
  const r = parse(body, 'hold');
  const ok = typeof r.nodeId === 'string' && int(r.epoch) && int(r.generation) && (r.state === 'held' || r.state === 'released');
  if (!ok) throw new BadRequest('hold record has missing or invalid fields');
  return r as unknown as HoldRecord;
}
