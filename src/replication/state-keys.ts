/**
 * Keys of an actor's chain in the bucket — the only module that builds or parses them:
 *
 *   state/<tenant>/<class>/<name hex>/<seq, 20 digits>
 *   state/acme/Counter/6869747320/00000000000000000007      (link 7 of acme/Counter/"hits ")
 *
 * Zero-padded sequence numbers make the listing order the chain order.
 */
import { nameFromHex, nameHex, parseAddress, type ActorAddress } from '../core/address.js';

const SEQ_DIGITS = 20;

/** Every link's key starts with this; `statePrefix(tenant)` narrows it to one tenant. */
export function statePrefix(tenant?: string): string {
  return tenant === undefined ? 'state/' : `state/${tenant}/`;
}

export function chainPrefix(a: ActorAddress): string {
  return `${statePrefix(a.tenant)}${a.className}/${nameHex(a.name)}/`;
}

export function linkKey(a: ActorAddress, seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 1) throw new RangeError(`link seq must be a positive integer, got ${seq}`);
  return chainPrefix(a) + String(seq).padStart(SEQ_DIGITS, '0');
}

/** The seq of a key under `chainPrefix(a)`, or undefined for anything else. */
export function seqOfKey(a: ActorAddress, key: string): number | undefined {
  const prefix = chainPrefix(a);
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  if (!/^\d{20}$/.test(rest)) return undefined;
  const seq = Number(rest);
  return Number.isSafeInteger(seq) && seq >= 1 ? seq : undefined;
}

/** Parses any link key back into its address and seq (for tools that walk `state/`). */
export function parseLinkKey(key: string): { address: ActorAddress; seq: number } | undefined {
  const m = /^state\/([^/]+)\/([^/]+)\/((?:[0-9a-f]{2})+)\/(\d{20})$/.exec(key);
  if (!m) return undefined;
  try {
    const address = parseAddress({ tenant: m[1], className: m[2], name: nameFromHex(m[3]!) });
    return { address, seq: Number(m[4]) };
  } catch {
    return undefined;
  }
}
