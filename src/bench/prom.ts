/**
 * Reading a node's GET /metrics (Prometheus text): metric family → label set → value, and the
 * sums the benchmarks need (all series of a family; by one label).
 */
import { authHeaders, type Endpoint } from './node-calls.js';

export type Scrape = Map<string, Map<string, number>>;

export function parseProm(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([-+0-9.eE]+|NaN|[+-]Inf)$/.exec(line);
    if (!m) continue;
    if (!out.has(m[1]!)) out.set(m[1]!, new Map());
    out.get(m[1]!)!.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

export async function scrape(at: Endpoint): Promise<Scrape> {
  const res = await fetch(`${at.url}/metrics`, { headers: authHeaders(at), signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`GET ${at.url}/metrics: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  return parseProm(await res.text());
}

/** Sum of every series of `family` whose label set contains `labels` (e.g. 'outcome="ran"'). */
export function total(s: Scrape, family: string, labels = ''): number {
  let n = 0;
  for (const [l, v] of s.get(family) ?? []) if (l.includes(labels)) n += v;
  return n;
}

/** `family`'s values by one label's value (series without it are keyed by their label set). */
export function byLabel(s: Scrape, family: string, label: string, where = ''): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [l, v] of s.get(family) ?? []) {
    if (!l.includes(where)) continue;
    const k = new RegExp(`${label}="([^"]*)"`).exec(l)?.[1] ?? l;
    out[k] = (out[k] ?? 0) + v;
  }
  return out;
}

/** after − before, per key (counters only grow; a missing key counts as 0). */
export function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
  return out;
}
