/**
 * Etags of the local stores: the MD5 of the body in lowercase hex, as S3 computes it for a
 * single-part upload, so equal bodies have equal etags in every store.
 */
import { hash } from 'node:crypto';

export function etagOf(body: Uint8Array): string {
  return hash('md5', body, 'hex'); // one-shot: no Hash object per request
}

/** Strips the double quotes S3 puts around etags (and W/ weak prefixes, which S3 never sends). */
export function unquoteEtag(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}
