/**
 * A Retry-After header (RFC 9110 §10.2.3) in ms: delay-seconds or an HTTP date, relative to
 * `nowMs`; undefined when absent or unreadable. Read by keepwork/client from a node's answers and
 * by the S3 store from a throttling bucket's.
 */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | undefined {
  if (header === null || header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = /GMT$/.test(text) ? Date.parse(text) : NaN; // an HTTP date, e.g. Thu, 01 Jan 2026 12:00:03 GMT
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
