/**
 * AWS Signature Version 4 for S3 requests (pure: the time and the credentials come in, headers go
 * out). The canonical request, string to sign and signing key follow AWS's "Create a signed AWS
 * API request" reference; test/store/s3-sigv4.test.ts checks them against AWS's published examples.
 *
 *   canonical request = METHOD \n /encoded/path \n sorted&query \n name:value\n… \n name;… \n payload hash
 *   string to sign    = AWS4-HMAC-SHA256 \n 20130524T000000Z \n 20130524/us-east-1/s3/aws4_request \n hex(sha256(canonical))
 *   signature         = hex(hmac(hmac(hmac(hmac(hmac("AWS4"+secret, day), region), service), "aws4_request"), string to sign))
 *
 * S3 differs from other services in two ways kept here: the path is encoded once (not twice), and
 * the payload's hash is sent in `x-amz-content-sha256` and signed.
 */
import { createHash, createHmac } from 'node:crypto';

export interface SigningCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface RequestToSign {
  method: string;
  /** The path as sent: already URI-encoded (`encodePath`). */
  path: string;
  /** Query parameters, not encoded; sorted and encoded here. */
  query?: readonly (readonly [string, string])[];
  /** Headers to sign, names in lower case (host included); values are trimmed here. */
  headers: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the body. */
  payloadHash: string;
}

export interface SigningScope {
  region: string;
  service: string;
  /** ISO basic format, `20130524T000000Z` (`amzDate`). */
  amzDate: string;
}

export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

let lastSecond = NaN;
let lastDate = '';

/** `Date.UTC` milliseconds → `20130524T000000Z` (the last second's text is kept: most requests share it). */
export function amzDate(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastDate = new Date(second * 1000).toISOString().replace(/[:-]|\.\d{3}/g, '');
    lastSecond = second;
  }
  return lastDate;
}

const UNRESERVED = /[^A-Za-z0-9\-._~]/gu; // u: a character above U+FFFF is one match, not two halves
const encodeByte = (c: string) => Array.from(Buffer.from(c, 'utf8'), (b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('');

/** RFC 3986 encoding as SigV4 wants it: every byte but A–Z a–z 0–9 - . _ ~ as %XX (upper-case hex). */
export function uriEncode(text: string): string {
  return text.replace(UNRESERVED, encodeByte);
}

/** A key as a path: each `/`-separated segment encoded, the slashes kept. */
export function encodePath(key: string): string {
  return key.split('/').map(uriEncode).join('/');
}

/** `a=1&b=%2F`: names sorted by their encoded form, as sent and as signed. */
export function canonicalQuery(query: readonly (readonly [string, string])[] = []): string {
  return query
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/**
 * Signs a request: the `Authorization` header's value. `keys` caches the signing key of the
 * day, region and service (one HMAC chain a day instead of four per request).
 */
export function authorization(request: RequestToSign, scope: SigningScope, credentials: SigningCredentials, keys: SigningKeys): string {
  const names = Object.keys(request.headers).sort();
  let canonicalHeaders = '';
  for (const name of names) canonicalHeaders += `${name}:${canonicalValue(request.headers[name]!)}\n`;
  const signedHeaders = names.join(';');
  const canonical = `${request.method}\n${request.path}\n${canonicalQuery(request.query)}\n${canonicalHeaders}\n${signedHeaders}\n${request.payloadHash}`;
  const day = scope.amzDate.slice(0, 8);
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${scope.amzDate}\n${credentialScope}\n${sha256Hex(canonical)}`;
  const key = keys.get(credentials.secretAccessKey, day, scope.region, scope.service);
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${credentialScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
}

/** Trimmed, runs of spaces as one. */
function canonicalValue(value: string): string {
  const trimmed = value.trim();
  return trimmed.includes('  ') ? trimmed.replace(/ +/g, ' ') : trimmed;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The last signing key made (a client signs for one secret, region and service at a time). */
export class SigningKeys {
  private id = '';
  private key: Buffer | undefined;

  get(secret: string, day: string, region: string, service: string): Buffer {
    const id = `${secret}\n${day}\n${region}\n${service}`;
    if (this.key && this.id === id) return this.key;
    let key = createHmac('sha256', `AWS4${secret}`).update(day).digest();
    for (const part of [region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
    this.id = id;
    this.key = key;
    return key;
  }
}
