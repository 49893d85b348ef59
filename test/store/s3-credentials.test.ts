/** Where the lean S3 client's keys come from (src/store/s3/credentials.ts): the environment shortcut and the cache. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Clock } from '../../src/core/clock.js';
import { CachedCredentials, defaultCredentialSource, type Credentials } from '../../src/store/s3/credentials.js';

const clockAt = (ms: { now: number }): Clock => ({
  now: () => ms.now,
  sleep: async () => {},
  setTimer: () => ({ cancel: () => {} }),
});

describe('defaultCredentialSource', () => {
  it('takes the environment keys (and session token, expiry) as the chain would, without loading it', async () => {
    const source = defaultCredentialSource({
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'token',
      AWS_CREDENTIAL_EXPIRATION: '2030-01-01T00:00:00Z',
    });
    assert.deepEqual(await source(), {
      accessKeyId: 'id',
      secretAccessKey: 'secret',
      sessionToken: 'token',
      expiration: new Date('2030-01-01T00:00:00Z'),
    });
  });

  it('with AWS_PROFILE set, or no keys, asks the SDK chain (which fails here: no profile file)', async () => {
    const env = {
      AWS_PROFILE: 'keepwork-test-missing-profile',
      AWS_CONFIG_FILE: '/nonexistent',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    };
    const saved = { ...process.env };
    Object.assign(process.env, env, { AWS_EC2_METADATA_DISABLED: 'true' });
    try {
      await assert.rejects(defaultCredentialSource({ ...env, AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 's' })(), (e: Error) =>
        /profile|credential/i.test(e.message),
      );
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});

describe('CachedCredentials', () => {
  it('fetches once while valid, again within refreshBeforeMs of expiry, one fetch at a time', async () => {
    const time = { now: 0 };
    let fetches = 0;
    const source = async (): Promise<Credentials> => ({
      accessKeyId: `id${++fetches}`,
      secretAccessKey: 's',
      expiration: new Date(time.now + 60_000),
    });
    const cache = new CachedCredentials(source, clockAt(time), 10_000);
    const [a, b] = await Promise.all([cache.get(), cache.get()]);
    assert.equal(a.accessKeyId, 'id1');
    assert.equal(b.accessKeyId, 'id1');
    time.now = 49_999;
    assert.equal((await cache.get()).accessKeyId, 'id1');
    time.now = 50_001;
    assert.equal((await cache.get()).accessKeyId, 'id2');
    assert.equal(fetches, 2);
  });

  it('long-term keys (no expiration) are fetched once', async () => {
    let fetches = 0;
    const cache = new CachedCredentials(async () => ({ accessKeyId: `id${++fetches}`, secretAccessKey: 's' }), clockAt({ now: 0 }));
    await cache.get();
    await cache.get();
    assert.equal(fetches, 1);
  });

  it('a failed refresh keeps the old credentials until they expire, then fails', async () => {
    const time = { now: 0 };
    let fail = false;
    const source = async (): Promise<Credentials> => {
      if (fail) throw new Error('IMDS unreachable');
      return { accessKeyId: 'id', secretAccessKey: 's', expiration: new Date(60_000) };
    };
    const cache = new CachedCredentials(source, clockAt(time), 10_000);
    await cache.get();
    fail = true;
    time.now = 55_000;
    assert.equal((await cache.get()).accessKeyId, 'id');
    time.now = 60_000;
    await assert.rejects(Promise.resolve(cache.get()), /IMDS unreachable/);
  });
});
