/**
 * keepwork/client's options, in the project's three stages:
 *
 *   ClientOptions (all optional but url)  →  CLIENT_DEFAULTS  →  resolveClientOptions(): ClientSettings
 *
 * Names end in their unit. `resolveClientOptions` validates once and throws BAD_CONFIG naming the
 * option and the rule; an unknown option name is refused (a typo must not be silently ignored).
 */
import { BadConfig } from '../core/errors.js';

export const CLIENT_DEFAULTS = Object.freeze({
  /** Attempts of one durable call in all, the first included (plain calls are never retried). */
  callAttemptsMax: 5,
  /** The delay after a durable call's first failed attempt; it doubles after each next one (with jitter). */
  callRetryBaseMs: 200,
  /** A cap on that doubled delay (a longer Retry-After is still honoured, within callRetryTotalMs). */
  callRetryMaxMs: 5_000,
  /** No retry of a durable call starts later than this after its first attempt started. */
  callRetryTotalMs: 30_000,
  /** Time limit of one attempt (a request and its answer); past it the attempt failed, NODE_UNREACHABLE. */
  requestTimeoutMs: 60_000,
});

type Tunable = keyof typeof CLIENT_DEFAULTS;

export type ClientOptions = { [K in Tunable]?: number } & {
  /** The node's base URL, http or https (`http://127.0.0.1:8080`); any node of the cluster routes to the holder. */
  url: string | URL;
  /** A bearer token from the node's token file (docs/security.md); none: nodes without tokens only. */
  token?: string;
};

export type ClientSettings = { readonly [K in Tunable]: number } & {
  /** The base URL without a trailing slash. */
  readonly url: string;
  readonly token: string | undefined;
};

const RULES: Readonly<Record<Tunable, { min: number; max: number }>> = {
  callAttemptsMax: { min: 1, max: 100 },
  callRetryBaseMs: { min: 0, max: 3_600_000 },
  callRetryMaxMs: { min: 0, max: 3_600_000 },
  callRetryTotalMs: { min: 0, max: 86_400_000 },
  requestTimeoutMs: { min: 1, max: 86_400_000 },
};

export function resolveClientOptions(options: ClientOptions): ClientSettings {
  const known = ['url', 'token', ...Object.keys(CLIENT_DEFAULTS)];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new BadConfig(`unknown client option ${key}; known options: ${known.join(', ')}`);
  }
  const merged: Record<Tunable, number> = { ...CLIENT_DEFAULTS };
  for (const key of Object.keys(CLIENT_DEFAULTS) as Tunable[]) {
    const value: unknown = options[key];
    if (value === undefined) continue;
    const { min, max } = RULES[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value))
      throw new BadConfig(`${key} must be an integer, got ${JSON.stringify(value)}`);
    if (value < min || value > max) throw new BadConfig(`${key} must be between ${min} and ${max}, got ${value}`);
    merged[key] = value;
  }
  if (merged.callRetryBaseMs > merged.callRetryMaxMs)
    throw new BadConfig(`callRetryBaseMs (${merged.callRetryBaseMs}) must not exceed callRetryMaxMs (${merged.callRetryMaxMs})`);
  return Object.freeze({ ...merged, url: baseUrl(options.url), token: token(options.token) });
}

function baseUrl(url: unknown): string {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw new BadConfig(`url must be an http or https URL such as http://127.0.0.1:8080, got ${JSON.stringify(String(url))}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new BadConfig(`url must be an http or https URL, got ${parsed.protocol} (${JSON.stringify(String(url))})`);
  if (parsed.search || parsed.hash || parsed.username || parsed.password)
    throw new BadConfig('url must be a base URL without credentials, query or fragment (give the token as token)');
  return parsed.href.replace(/\/+$/, '');
}

function token(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[\x21-\x7e]+$/.test(value))
    throw new BadConfig('token must be a non-empty string of visible ASCII characters (a token from the token file)');
  return value;
}
