/**
 * The S3 store's URL: `s3://bucket[/prefix][?endpoint=http(s)://host[:port]][&region=name]`
 * parsed into an `S3Location` (what `S3Store` is built from), or a `BadConfig` naming the problem.
 *
 *   s3://keep/prod?endpoint=http://rgw:7480&region=eu-1  →  { bucket: 'keep', prefix: 'prod/',
 *                              endpoint: 'http://rgw:7480', region: 'eu-1', forcePathStyle: true }
 */
import { BadConfig } from '../../core/errors.js';
import { validateKey } from '../keys.js';

export interface S3Location {
  bucket: string;
  /** '' or a key prefix ending in '/'. */
  prefix: string;
  endpoint?: string;
  region: string;
  forcePathStyle: boolean;
}

const DEFAULT_REGION = 'us-east-1';
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Parses `s3://bucket[/prefix][?endpoint=http(s)://host[:port]][&region=name]`. The prefix gets a
 * trailing '/'; a given endpoint implies path-style addressing. Region: the URL's, else
 * `AWS_REGION` / `AWS_DEFAULT_REGION`, else us-east-1. Throws `BadConfig` naming the problem.
 */
export function parseS3Url(url: string, env: NodeJS.ProcessEnv = process.env): S3Location {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BadConfig(`not a valid URL: ${JSON.stringify(url)}; expected s3://bucket/prefix?endpoint=...&region=...`);
  }
  if (u.protocol !== 's3:') throw new BadConfig(`S3 URL must start with s3://, got ${JSON.stringify(url)}`);
  if (u.username || u.password || u.port || u.hash)
    throw new BadConfig(`S3 URL must not carry credentials, a port or a #fragment: ${JSON.stringify(url)}`);
  const bucket = u.hostname;
  if (!BUCKET_NAME.test(bucket) || bucket.includes('..'))
    throw new BadConfig(`invalid S3 bucket name ${JSON.stringify(bucket)} in ${JSON.stringify(url)}`);
  const location: S3Location = { bucket, prefix: parsePrefix(rawPath(url), url), region: DEFAULT_REGION, forcePathStyle: false };
  for (const [name, value] of u.searchParams) {
    if (name === 'endpoint') location.endpoint = parseEndpoint(value);
    else if (name === 'region') location.region = parseRegion(value);
    else throw new BadConfig(`unknown S3 URL parameter ${JSON.stringify(name)}; known: endpoint, region`);
  }
  if (!u.searchParams.has('region')) location.region = env.AWS_REGION || env.AWS_DEFAULT_REGION || DEFAULT_REGION;
  location.forcePathStyle = location.endpoint !== undefined;
  return location;
}

/** The path as written: `URL` would resolve `a/../b` to `/b` and silently change the prefix. */
function rawPath(url: string): string {
  const rest = url.slice(url.indexOf('//') + 2).split(/[?#]/, 1)[0]!;
  const slash = rest.indexOf('/');
  return slash < 0 ? '' : rest.slice(slash);
}

function parsePrefix(pathname: string, url: string): string {
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    throw new BadConfig(`S3 URL has a malformed %-escape in its path: ${JSON.stringify(url)}`);
  }
  path = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '') return '';
  try {
    validateKey(path);
  } catch (e) {
    throw new BadConfig(`invalid prefix in S3 URL ${JSON.stringify(url)}: ${(e as Error).message}`, { cause: e });
  }
  return path + '/';
}

function parseEndpoint(value: string): string {
  let e: URL;
  try {
    e = new URL(value);
  } catch {
    throw new BadConfig(`S3 endpoint must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (e.protocol !== 'http:' && e.protocol !== 'https:')
    throw new BadConfig(`S3 endpoint must be an http(s) URL, got ${JSON.stringify(value)}`);
  if ((e.pathname !== '/' && e.pathname !== '') || e.search || e.hash || e.username) {
    throw new BadConfig(`S3 endpoint must be scheme://host[:port] only, got ${JSON.stringify(value)}`);
  }
  return e.origin;
}

function parseRegion(value: string): string {
  if (!/^[a-z0-9-]{1,64}$/.test(value)) throw new BadConfig(`invalid S3 region ${JSON.stringify(value)}`);
  return value;
}
