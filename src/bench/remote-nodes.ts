/**
 * Running nodes a bench measures instead of starting its own (`--targets URL,…`): the operator's
 * nodes on the operator's hosts, started on the bench's place in the bucket with the bench's class
 * (`keepwork start … --class "$(keepwork bench class)"`). A token, when the nodes want one, comes
 * from KEEPWORK_TOKEN: `call` on tenant `bench` and `read` on every tenant (for /metrics).
 *
 * Before the bench writes anything each target is checked, and refused with BAD_CONFIG naming
 * what to do:
 *
 *   GET /healthz                          answers, with its node id (no two targets the same node)
 *   GET /metrics                          the token may read it
 *   POST …/bench/BenchAlarmed/…/destroy   the class and its method are served (a body that is
 *                                          not an argument array: refused as 400 before any actor
 *                                          is taken, 404 when the class is not there)
 *   nodes/<id> in the bench's place       the node runs on that bucket, not another
 */
import { BadConfig } from '../core/errors.js';
import { nodeKey } from '../leases/records.js';
import type { ObjectStore } from '../store/types.js';
import type { DrainingNode } from './drain.js';
import { BENCH_CLASS } from './local-nodes.js';
import { authHeaders, type Endpoint } from './node-calls.js';

const CHECK_TIMEOUT_MS = 10_000;
const TOKEN_HINT =
  'set KEEPWORK_TOKEN to a token with call on tenant bench and read on every tenant, e.g. ' +
  '`keepwork token add bench --tenants "*" --rights call,read` in the nodes\' --auth-file';

/** Checks every target (base URLs from parseTargets; see the header); resolves with them as nodes that drain. */
export async function connectTargets(
  urls: readonly string[],
  token: string | undefined,
  store: ObjectStore,
  place: string,
): Promise<DrainingNode[]> {
  const nodes = await Promise.all(urls.map((u) => checkTarget(u, token, store, place)));
  const seen = new Map<string, string>();
  for (const n of nodes) {
    const other = seen.get(n.nodeId);
    if (other) throw new BadConfig(`--targets: ${other} and ${n.url} are the same node (${n.nodeId}); name each node once`);
    seen.set(n.nodeId, n.url);
  }
  return nodes;
}

/** `--targets` as a list of http(s) base URLs (no path, query or trailing slash). */
export function parseTargets(text: string): string[] {
  const urls = text
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (urls.length === 0) throw new BadConfig('--targets expects URL,…: the nodes to measure, e.g. http://10.0.0.5:8080');
  return urls.map(targetUrl);
}

function targetUrl(text: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new BadConfig(`--targets: ${JSON.stringify(text)} is not a URL (http://host:port)`);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.search || u.hash || (u.pathname !== '/' && u.pathname !== ''))
    throw new BadConfig(`--targets: ${JSON.stringify(text)} must be a node's base URL, http(s)://host:port, with no path or query`);
  return u.origin;
}

async function checkTarget(url: string, token: string | undefined, store: ObjectStore, place: string): Promise<DrainingNode> {
  const at: Endpoint = { url, token };
  const health = await request(at, 'GET', '/healthz');
  const nodeId = (health.body as { nodeId?: unknown }).nodeId;
  if (typeof nodeId !== 'string')
    throw new BadConfig(`--targets: ${url}/healthz did not answer as a keepwork node (HTTP ${health.status})`);
  const metrics = await request(at, 'GET', '/metrics');
  if (metrics.status === 401 || metrics.status === 403)
    throw new BadConfig(`--targets: ${url} refused /metrics (HTTP ${metrics.status}${token ? '' : ', no token was sent'}): ${TOKEN_HINT}`);
  if (metrics.status !== 200) throw new BadConfig(`--targets: ${url}/metrics answered HTTP ${metrics.status}`);
  const probe = await request(at, 'POST', `/v1/actors/bench/${BENCH_CLASS}/probe/destroy`, '"not an argument array"');
  if (probe.status === 401 || probe.status === 403)
    throw new BadConfig(`--targets: ${url} refused a call on tenant bench (HTTP ${probe.status}): ${TOKEN_HINT}`);
  if (probe.status === 404)
    throw new BadConfig(
      `--targets: ${url} (node ${nodeId}) does not serve the bench's class: start it with --class "$(keepwork bench class)" ` +
        `(${describe(probe.body)})`,
    );
  if (probe.status !== 400)
    throw new BadConfig(`--targets: ${url} answered a probe call with HTTP ${probe.status} (${describe(probe.body)})`);
  if ((await store.head(nodeKey(nodeId))) === null)
    throw new BadConfig(
      `--targets: ${url} is node ${nodeId}, which has no record in ${place}: it runs on another bucket or prefix. ` +
        'Give --bucket (and --prefix) of the place the targets run on',
    );
  return { url, token, nodeId, running: () => true };
}

async function request(at: Endpoint, method: string, path: string, body?: string): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(at.url + path, {
      method,
      body,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...authHeaders(at) },
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
  } catch (e) {
    throw new BadConfig(`--targets: ${at.url} does not answer (${(e as Error).cause ?? (e as Error).message})`);
  }
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: res.status, body: text };
  }
}

const describe = (body: unknown) =>
  typeof body === 'object' && body !== null && 'error' in body
    ? `${String((body as { error: unknown }).error)}: ${String((body as { message?: unknown }).message ?? '')}`
    : String(body).slice(0, 200);
