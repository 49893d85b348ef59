/**
 * The networks forwards may go to (`--peers-allow CIDR,…`, `startNode({ peersAllow })`): IPv4 and
 * IPv6 CIDRs (a bare address is its /32 or /128). A holder's address whose host is an IP literal
 * must be inside one; a host name is resolved and every address it resolves to must be inside.
 * A forward to anywhere else is refused before anything is sent (forward.ts: OWNER_UNREACHABLE),
 * so a node record planted in the bucket cannot aim calls at a service outside the cluster.
 *
 *   parsePeersAllow(['10.0.0.0/8', 'fd00::/8'])  →  PeersAllow | BAD_CONFIG naming the entry
 *   peers.refusal('http://node-2.internal:8080')   →  undefined (allowed) | why not
 *
 * The name is resolved for the check and again by the connection: a name whose answers change in
 * between (its DNS in an attacker's hands) is not covered; give peers as addresses for that.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { BadConfig } from '../core/errors.js';

/** Every address `host` resolves to. */
export type Resolve = (host: string) => Promise<string[]>;

const resolveAll: Resolve = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** How many refused addresses are remembered, each logged once (forward.ts). */
const REFUSED_REMEMBERED_MAX = 1_024;

export class PeersAllow {
  private readonly refused = new Set<string>();

  constructor(
    private readonly list: BlockList,
    /** The CIDRs as given, for messages. */
    readonly cidrs: readonly string[],
    private readonly resolve: Resolve = resolveAll,
  ) {}

  /** Whether an IP address is inside the allowed networks (an IPv4-mapped IPv6 address counts as its IPv4 one). */
  allows(ip: string): boolean {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
    if (mapped) return this.list.check(mapped, 'ipv4') || this.list.check(ip, 'ipv6');
    const family = isIP(ip);
    return family === 4 ? this.list.check(ip, 'ipv4') : family === 6 ? this.list.check(ip, 'ipv6') : false;
  }

  /** Why a forward to `addr` (a node address, records.ts nodeAddrProblem) is refused; undefined: it may go. */
  async refusal(addr: string): Promise<string | undefined> {
    const host = new URL(addr).hostname.replace(/^\[|\]$/g, '');
    let ips: string[];
    try {
      ips = isIP(host) ? [host] : await this.resolve(host);
    } catch (e) {
      return `its host ${host} does not resolve (${(e as Error).message})`;
    }
    const outside = ips.filter((ip) => !this.allows(ip));
    if (ips.length === 0) return `its host ${host} resolves to no address`;
    if (outside.length > 0)
      return `${outside.join(', ')} ${outside.length === 1 ? 'is' : 'are'} outside --peers-allow ${this.cidrs.join(',')}`;
    return undefined;
  }

  /** True the first time `addr` is refused (bounded: the oldest are forgotten), so a planted record is logged once. */
  firstRefusal(addr: string): boolean {
    if (this.refused.has(addr)) return false;
    this.refused.add(addr);
    if (this.refused.size > REFUSED_REMEMBERED_MAX) this.refused.delete(this.refused.values().next().value!);
    return true;
  }
}

/** `--peers-allow 10.0.0.0/8,fd00::/8` (a comma-separated string, or a list) → PeersAllow; BAD_CONFIG names a bad entry. */
export function parsePeersAllow(cidrs: string | readonly string[], resolve?: Resolve): PeersAllow {
  const entries = (typeof cidrs === 'string' ? cidrs.split(',') : [...cidrs]).map((c) => c.trim()).filter((c) => c !== '');
  if (entries.length === 0) throw new BadConfig('peersAllow must name at least one network (CIDR), e.g. 10.0.0.0/8');
  const list = new BlockList();
  for (const entry of entries) {
    const [ip = '', bits, extra] = entry.split('/');
    const family = isIP(ip);
    const maxBits = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? maxBits : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= maxBits))
      throw new BadConfig(`peersAllow: ${JSON.stringify(entry)} is not an IPv4 or IPv6 network (CIDR such as 10.0.0.0/8 or fd00::/8)`);
    list.addSubnet(ip, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return new PeersAllow(list, entries, resolve);
}
