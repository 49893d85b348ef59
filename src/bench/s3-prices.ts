/**
 * S3 Standard request prices, the one table the benchmarks price requests by (bench/drain,
 * bench/fleet; cited in docs/benchmarks.md). AWS list prices, us-east-1, dollars per 1,000 requests:
 *
 *   PUT, COPY, POST, LIST   $0.005     (a conditional PUT is a PUT; DeleteObjects is a POST)
 *   GET and all others      $0.0004    (HEAD included)
 *   DELETE                  free
 *
 * `OP_VERBS` names each operation of keepwork_store_requests_total{op} by the S3 request it sends.
 */

export const S3_VERBS = ['GET', 'HEAD', 'PUT', 'conditional PUT', 'LIST', 'DELETE', 'DeleteObjects'] as const;
export type S3Verb = (typeof S3_VERBS)[number];

export const S3_STANDARD_DOLLARS_PER_1000: Readonly<Record<S3Verb, number>> = Object.freeze({
  GET: 0.0004,
  HEAD: 0.0004,
  PUT: 0.005,
  'conditional PUT': 0.005,
  LIST: 0.005,
  DELETE: 0,
  DeleteObjects: 0.005,
});

/** keepwork_store_requests_total's op → the S3 request it is. */
export const OP_VERBS: Readonly<Record<string, S3Verb>> = Object.freeze({
  get: 'GET',
  head: 'HEAD',
  put: 'PUT',
  put_conditional: 'conditional PUT',
  list: 'LIST',
  delete: 'DELETE',
  delete_many: 'DeleteObjects',
});

/** Requests by S3 verb from counts by op (an unknown op throws: price it first). */
export function byVerb(perOp: Record<string, number>): Partial<Record<S3Verb, number>> {
  const out: Partial<Record<S3Verb, number>> = {};
  for (const [op, n] of Object.entries(perOp)) {
    const verb = OP_VERBS[op];
    if (verb === undefined) throw new Error(`no S3 price for store operation ${op}`);
    out[verb] = (out[verb] ?? 0) + n;
  }
  return out;
}

/** Dollars per million of whatever `perItem` counts requests per (a delivered alarm). */
export function dollarsPerMillion(perItem: Partial<Record<S3Verb, number>>): number {
  let dollars = 0;
  for (const [verb, n] of Object.entries(perItem)) dollars += (n * 1_000_000 * S3_STANDARD_DOLLARS_PER_1000[verb as S3Verb]) / 1000;
  return dollars;
}
