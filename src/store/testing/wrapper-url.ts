/**
 * The URL of a store wrapped for tests and benchmarks: `<scheme><inner url>[?params]`, where the
 * wrapper's own parameters are taken out of the query and the rest stays with the inner URL
 * (`latency+s3://b/p?endpoint=http://h:7480&ms=5` → inner `s3://b/p?endpoint=http://h:7480`).
 */
import { BadConfig } from '../../core/errors.js';

export function splitWrapperUrl(url: string, scheme: string, own: readonly string[]): { inner: string; params: Map<string, string> } {
  if (!url.startsWith(scheme)) throw new BadConfig(`not a ${scheme} URL: ${JSON.stringify(url)}`);
  const rest = url.slice(scheme.length);
  const q = rest.indexOf('?');
  const params = new Map<string, string>();
  if (q < 0) return { inner: rest, params };
  const query = new URLSearchParams(rest.slice(q + 1));
  for (const name of own) {
    const value = query.get(name);
    if (value !== null) params.set(name, value);
    query.delete(name);
  }
  const left = query.toString();
  return { inner: rest.slice(0, q) + (left ? `?${left}` : ''), params };
}

/** A wrapper parameter as a number in [min, max]; BadConfig naming the URL and the rule otherwise. */
export function numberParam(url: string, params: Map<string, string>, name: string, fallback: number, min: number, max: number): number {
  const text = params.get(name);
  if (text === undefined) return fallback;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < min || n > max)
    throw new BadConfig(`${JSON.stringify(url)}: ${name} must be a number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  return n;
}
