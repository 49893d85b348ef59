/**
 * Signature V4 (src/store/s3/sigv4.ts) against AWS's published examples — the S3 API reference's
 * "Signature calculations for the Authorization header" examples and the get-vanilla case of the
 * aws-sig-v4-test-suite, with their documented credentials and dates — and against the SDK's own
 * signer (@smithy/signature-v4) for arbitrary keys and listing parameters.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SignatureV4 } from '@smithy/signature-v4';
import type { SourceData } from '@smithy/types';
import {
  EMPTY_SHA256,
  SigningKeys,
  amzDate,
  authorization,
  canonicalQuery,
  encodePath,
  sha256Hex,
  uriEncode,
} from '../../src/store/s3/sigv4.js';

const S3_EXAMPLE = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const S3_SCOPE = { region: 'us-east-1', service: 's3', amzDate: '20130524T000000Z' };
const S3_HOST = 'examplebucket.s3.amazonaws.com';
const signatureOf = (auth: string) => auth.slice(auth.indexOf('Signature=') + 'Signature='.length);

describe('SigV4: AWS published examples', () => {
  it('get-vanilla (aws-sig-v4-test-suite)', () => {
    const auth = authorization(
      { method: 'GET', path: '/', headers: { host: 'example.amazonaws.com', 'x-amz-date': '20150830T123600Z' }, payloadHash: EMPTY_SHA256 },
      { region: 'us-east-1', service: 'service', amzDate: '20150830T123600Z' },
      { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
      new SigningKeys(),
    );
    assert.equal(
      auth,
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
  });

  it('S3 GET Object with a Range header', () => {
    const headers = { host: S3_HOST, range: 'bytes=0-9', 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': S3_SCOPE.amzDate };
    const auth = authorization(
      { method: 'GET', path: '/test.txt', headers, payloadHash: EMPTY_SHA256 },
      S3_SCOPE,
      S3_EXAMPLE,
      new SigningKeys(),
    );
    assert.equal(
      auth,
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('S3 PUT Object: a signed payload and a key with "$" encoded once', () => {
    const payloadHash = sha256Hex('Welcome to Amazon S3.');
    assert.equal(payloadHash, '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072');
    const headers = {
      date: 'Fri, 24 May 2013 00:00:00 GMT',
      host: S3_HOST,
      'x-amz-content-sha256': payloadHash,
      'x-amz-date': S3_SCOPE.amzDate,
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    };
    const path = '/' + encodePath('test$file.text');
    assert.equal(path, '/test%24file.text');
    const auth = authorization({ method: 'PUT', path, headers, payloadHash }, S3_SCOPE, S3_EXAMPLE, new SigningKeys());
    assert.equal(signatureOf(auth), '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd');
  });

  it('S3 GET Bucket lifecycle and list objects: a value-less parameter, parameters sorted', () => {
    const headers = { host: S3_HOST, 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': S3_SCOPE.amzDate };
    const sign = (query: [string, string][]) =>
      signatureOf(
        authorization({ method: 'GET', path: '/', query, headers, payloadHash: EMPTY_SHA256 }, S3_SCOPE, S3_EXAMPLE, new SigningKeys()),
      );
    assert.equal(sign([['lifecycle', '']]), 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543');
    assert.equal(
      sign([
        ['prefix', 'J'],
        ['max-keys', '2'],
      ]),
      '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
    );
  });

  it('the signing key is the documented HMAC chain, cached per day', () => {
    const keys = new SigningKeys();
    const k1 = keys.get('secret', '20130524', 'us-east-1', 's3');
    const chain = ['20130524', 'us-east-1', 's3', 'aws4_request'].reduce<Buffer | string>(
      (k, part) => createHmac('sha256', k).update(part).digest(),
      'AWS4secret',
    );
    assert.deepEqual(k1, chain);
    assert.equal(keys.get('secret', '20130524', 'us-east-1', 's3'), k1, 'the same Buffer: not made again');
    assert.notDeepEqual(keys.get('secret', '20130525', 'us-east-1', 's3'), k1);
  });
});

describe('SigV4: URI encoding', () => {
  it('keeps A-Z a-z 0-9 - . _ ~ and encodes every other UTF-8 byte in upper-case hex', () => {
    assert.equal(uriEncode('Az09-._~'), 'Az09-._~');
    assert.equal(uriEncode('a b+c=d:e/f'), 'a%20b%2Bc%3Dd%3Ae%2Ff');
    assert.equal(uriEncode('café'), 'caf%C3%A9');
    assert.equal(uriEncode('😀'), '%F0%9F%98%80', 'a character above U+FFFF is its four bytes, not two replacement characters');
    assert.equal(encodePath('alarms/t1/Counter.t/x=1:2~'), 'alarms/t1/Counter.t/x%3D1%3A2~');
  });

  it('sorts query parameters by encoded name and encodes values fully', () => {
    assert.equal(
      canonicalQuery([
        ['start-after', 'a/b c'],
        ['list-type', '2'],
        ['continuation-token', '1/x=='],
      ]),
      'continuation-token=1%2Fx%3D%3D&list-type=2&start-after=a%2Fb%20c',
    );
    assert.equal(canonicalQuery([]), '');
  });

  it('amzDate is ISO 8601 basic format in UTC', () => {
    assert.equal(amzDate(Date.UTC(2013, 4, 24, 0, 0, 0, 999)), '20130524T000000Z');
  });
});

describe('SigV4: the same signatures as the SDK signer', () => {
  class Sha256 {
    private readonly h;
    constructor(secret?: SourceData) {
      this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
    }
    update(data: SourceData) {
      this.h.update(bytes(data));
    }
    async digest() {
      return new Uint8Array(this.h.digest());
    }
    reset() {}
  }
  const bytes = (d: SourceData) =>
    typeof d === 'string' ? d : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : new Uint8Array(d);
  const credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret/key+1' };
  const sdk = new SignatureV4({
    credentials,
    region: 'eu-west-1',
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const segment = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }).filter((s) => s !== '.' && s !== '..' && !s.includes('/'));

  it('for arbitrary keys, listing parameters and session tokens', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { minLength: 1, maxLength: 4 }),
        fc.string({ unit: 'grapheme', maxLength: 8 }),
        fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: undefined }),
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }),
        async (segments, prefix, token, now) => {
          const path = '/bucket/' + encodePath(segments.join('/'));
          const date = amzDate(now);
          const headers: Record<string, string> = { host: 's3.example:9000', 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': date };
          if (token) headers['x-amz-security-token'] = token;
          const query: [string, string][] = [
            ['list-type', '2'],
            ['prefix', prefix],
          ];
          const ours = authorization(
            { method: 'GET', path, query, headers, payloadHash: EMPTY_SHA256 },
            { region: 'eu-west-1', service: 's3', amzDate: date },
            credentials,
            new SigningKeys(),
          );
          const signed = await sdk.sign(
            {
              method: 'GET',
              protocol: 'http:',
              hostname: 's3.example',
              port: 9000,
              path,
              query: Object.fromEntries(query),
              headers: { ...headers },
            },
            { signingDate: new Date(now) },
          );
          assert.equal(ours, signed.headers.authorization);
        },
      ),
      { numRuns: 200 },
    );
  });
});
