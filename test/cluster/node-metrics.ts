/** A node's Prometheus counters read from its /metrics, for the tests' checks and diagnostics. */
import type { ClusterNode } from '../../support/cluster/node.js';

/** One node's Prometheus samples of `name`: label set → value. */
export async function samples(node: ClusterNode, name: string): Promise<Map<string, number>> {
  const res = await fetch(`${node.url}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([-+0-9.eE]+|NaN)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

/** A Prometheus counter of one node, summed over the label sets containing `labels` (e.g. outcome="ran"). */
export async function metric(node: ClusterNode, name: string, labels = ''): Promise<number> {
  let sum = 0;
  for (const [l, v] of await samples(node, name)) if (l.includes(labels)) sum += v;
  return sum;
}

/** "ran 515, stale 480, …" from keepwork_alarm_deliveries_total. */
export async function outcomes(node: ClusterNode): Promise<string> {
  const parts = [...(await samples(node, 'keepwork_alarm_deliveries_total'))].map(
    ([l, v]) => `${/outcome="([^"]*)"/.exec(l)?.[1] ?? l} ${v}`,
  );
  return parts.sort().join(', ') || 'none';
}
