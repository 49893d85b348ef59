/** The lean client's XML reader and writer (src/store/s3/xml.ts): listings, DeleteObjects, error bodies. */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { deleteErrors, deleteRequest, errorCode, escapeXml, listPage, unescapeXml } from '../../src/store/s3/xml.js';

const FIXTURES = new URL('../fixtures/s3-errors/', import.meta.url);
const listing = (body: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>${body}</ListBucketResult>`;
const contents = (key: string) =>
  `<Contents><Key>${key}</Key><LastModified>2026-12-05T13:32:43.563Z</LastModified><ETag>&quot;9dd4&quot;</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>`;

describe('listPage', () => {
  it('reads keys in order, unescaped, and the continuation of a truncated page', () => {
    const xml = listing(
      '<Prefix>a&amp;b/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys><IsTruncated>true</IsTruncated>' +
        '<ContinuationToken>old</ContinuationToken><NextContinuationToken>1/x+y==</NextContinuationToken>' +
        contents('a&amp;b/&lt;1&gt;') +
        contents('a&amp;b/&#x1F600;&#233;') +
        contents('a&amp;b/&quot;q&apos;'),
    );
    assert.deepEqual(listPage(xml), { keys: ['a&b/<1>', 'a&b/😀é', `a&b/"q'`], continuation: '1/x+y==' });
  });

  it('a page that is not truncated has no continuation; an empty one no keys', () => {
    assert.deepEqual(listPage(listing('<IsTruncated>false</IsTruncated>' + contents('k'))), { keys: ['k'] });
    assert.deepEqual(listPage(listing('<KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>')), { keys: [] });
    assert.deepEqual(listPage(listing('<IsTruncated>false</IsTruncated><NextContinuationToken>t</NextContinuationToken>')), { keys: [] });
  });

  it('keys with any character a key may hold come back as written', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', minLength: 1 }).filter((s) => !/[\u0000-\u001f\u007f]/.test(s))), (keys) => {
        const xml = listing('<IsTruncated>false</IsTruncated>' + keys.map((k) => contents(escapeXml(k))).join(''));
        assert.deepEqual(listPage(xml).keys, keys);
      }),
    );
  });

  it('refuses what is not a listing, or is cut short', () => {
    assert.throws(() => listPage('<Error><Code>X</Code></Error>'), SyntaxError);
    assert.throws(() => listPage(listing('<Contents><Key>abc')), SyntaxError);
  });
});

describe('deleteErrors and deleteRequest', () => {
  it('reads each failed key with its code; a quiet success has none', () => {
    const xml =
      '<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      '<Error><Key>root/a&amp;b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>' +
      '<Error><Key>root/c</Key><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>' +
      '</DeleteResult>';
    assert.deepEqual(deleteErrors(xml), [
      { key: 'root/a&b', code: 'AccessDenied' },
      { key: 'root/c', code: 'InternalError' },
    ]);
    assert.deepEqual(deleteErrors('<?xml version="1.0" encoding="UTF-8"?><DeleteResult/>'), []);
    assert.deepEqual(deleteErrors('<DeleteResult><Error><Key>k</Key></Error></DeleteResult>'), [{ key: 'k', code: '' }]);
    assert.throws(() => deleteErrors('<Error><Code>InternalError</Code></Error>'), SyntaxError);
  });

  it('writes a quiet Delete with every key escaped', () => {
    const xml = deleteRequest(['a&b', '<c>']);
    assert.match(xml, /<Quiet>true<\/Quiet><Object><Key>a&amp;b<\/Key><\/Object><Object><Key>&lt;c&gt;<\/Key><\/Object><\/Delete>$/);
  });
});

describe('errorCode', () => {
  it("reads the code of each of AWS's documented error bodies (test/fixtures/s3-errors)", () => {
    const codes = Object.fromEntries(readdirSync(FIXTURES).map((f) => [f, errorCode(readFileSync(new URL(f, FIXTURES), 'utf8'))]));
    assert.deepEqual(codes, {
      'access-denied.xml': 'AccessDenied',
      'conditional-request-conflict.xml': 'ConditionalRequestConflict',
      'internal-error.xml': 'InternalError',
      'no-such-bucket.xml': 'NoSuchBucket',
      'no-such-key.xml': 'NoSuchKey',
      'precondition-failed.xml': 'PreconditionFailed',
      'request-time-too-skewed.xml': 'RequestTimeTooSkewed',
      'rgw-unknown-error.xml': 'UnknownError',
      'slow-down.xml': 'SlowDown',
    });
  });

  it('is undefined for a body that is not an S3 error', () => {
    assert.equal(errorCode(''), undefined);
    assert.equal(errorCode('<html><body>502 Bad Gateway</body></html>'), undefined);
    assert.equal(errorCode('<Error><Code></Code></Error>'), undefined);
  });
});

describe('escapeXml / unescapeXml', () => {
  it('round-trip any text', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => assert.equal(unescapeXml(escapeXml(s)), s)));
    assert.equal(unescapeXml('&amp;lt;'), '&lt;', 'unescaped once');
  });
});
