/**
 * parseS3Url: what an `s3://bucket/prefix?endpoint=…&region=…` URL means (bucket, prefix,
 * endpoint, region, path or virtual-host style), and every malformed URL refused with BAD_CONFIG.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { parseS3Url } from '../../src/store/s3/url.js';

describe('parseS3Url', () => {
  const env = {};

  it('reads bucket, prefix, endpoint and region; an endpoint implies path style', () => {
    assert.deepEqual(parseS3Url('s3://keepwork-test/a/b?endpoint=http://127.0.0.1:7480&region=eu-west-1', env), {
      bucket: 'keepwork-test',
      prefix: 'a/b/',
      endpoint: 'http://127.0.0.1:7480',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
  });

  it('without a path the prefix is empty; a trailing slash is not doubled', () => {
    assert.equal(parseS3Url('s3://bucket', env).prefix, '');
    assert.equal(parseS3Url('s3://bucket/', env).prefix, '');
    assert.equal(parseS3Url('s3://bucket/p/', env).prefix, 'p/');
  });

  it('without an endpoint: virtual-host style; region from the environment, else us-east-1', () => {
    assert.deepEqual(parseS3Url('s3://bucket/p', env), { bucket: 'bucket', prefix: 'p/', region: 'us-east-1', forcePathStyle: false });
    assert.equal(parseS3Url('s3://bucket', { AWS_REGION: 'ap-south-1' }).region, 'ap-south-1');
    assert.equal(parseS3Url('s3://bucket', { AWS_DEFAULT_REGION: 'sa-east-1' }).region, 'sa-east-1');
    assert.equal(parseS3Url('s3://bucket?region=us-west-2', { AWS_REGION: 'ap-south-1' }).region, 'us-west-2');
  });

  it('decodes %-escapes in the prefix and keeps the endpoint origin only', () => {
    const loc = parseS3Url('s3://bucket/caf%C3%A9?endpoint=https://s3.example.com/', env);
    assert.equal(loc.prefix, 'café/');
    assert.equal(loc.endpoint, 'https://s3.example.com');
  });

  for (const [url, why] of [
    ['http://bucket/p', 'another scheme'],
    ['s3:/bucket', 'no host'],
    ['s3://', 'no bucket'],
    ['not a url', 'not a URL'],
    ['s3://Bucket_Name', 'invalid bucket name'],
    ['s3://ab', 'bucket name too short'],
    ['s3://user:pw@bucket', 'credentials in the URL'],
    ['s3://bucket:9000', 'a port on the bucket'],
    ['s3://bucket/a//b', 'an empty prefix segment'],
    ['s3://bucket/a/../b', 'a .. segment'],
    ['s3://bucket/%E0%A4%A', 'a malformed escape'],
    ['s3://bucket?endpoint=ftp://host', 'a non-http endpoint'],
    ['s3://bucket?endpoint=localhost:7480', 'an endpoint without a scheme'],
    ['s3://bucket?endpoint=http://host/path', 'an endpoint with a path'],
    ['s3://bucket?region=US%20East', 'an invalid region'],
    ['s3://bucket?regoin=us-east-1', 'an unknown parameter'],
    ['s3://bucket#frag', 'a fragment'],
  ] as const) {
    it(`refuses ${why}: ${url}`, () => {
      assert.throws(() => parseS3Url(url, env), { code: ErrorCode.BadConfig });
    });
  }
});
