import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { defaultBucketUrl } from '../../src/store/open.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-default-bucket-');

describe('defaultBucketUrl: the bucket of a data dir when none is given', () => {
  it('a new data dir (or one that does not exist yet): the SQLite file bucket.db in it', () => {
    const dir = tempDir();
    assert.equal(defaultBucketUrl(dir), `sqlite:${join(dir, 'bucket.db')}`);
    assert.equal(defaultBucketUrl(join(dir, 'later')), `sqlite:${join(dir, 'later', 'bucket.db')}`);
  });

  it('a data dir with a folder named bucket: that folder, whatever else is there', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'bucket'));
    writeFileSync(join(dir, 'bucket.db'), '');
    assert.equal(defaultBucketUrl(dir), pathToFileURL(join(dir, 'bucket')).href);
  });

  it('a file named bucket is not a folder bucket: still bucket.db', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bucket'), '');
    assert.equal(defaultBucketUrl(dir), `sqlite:${join(dir, 'bucket.db')}`);
  });
});
