/** client/options.ts: defaults, validation messages that name the option, the base URL and token. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CLIENT_DEFAULTS, resolveClientOptions, type ClientOptions } from '../../src/client/options.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';

const refused = (options: ClientOptions, message: RegExp) =>
  assert.throws(
    () => resolveClientOptions(options),
    (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && message.test(e.message),
  );

describe('resolveClientOptions', () => {
  it('merges the defaults and trims the base URL', () => {
    const s = resolveClientOptions({ url: 'http://127.0.0.1:8080/', token: 'kw_x', callAttemptsMax: 2 });
    assert.equal(s.url, 'http://127.0.0.1:8080');
    assert.equal(s.token, 'kw_x');
    assert.equal(s.callAttemptsMax, 2);
    assert.equal(s.callRetryTotalMs, CLIENT_DEFAULTS.callRetryTotalMs);
    assert.equal(resolveClientOptions({ url: new URL('https://kw.example/base/') }).url, 'https://kw.example/base');
    assert.ok(Object.isFrozen(s));
  });

  it('refuses bad values, naming the option and the rule', () => {
    refused({ url: 'localhost:8080' }, /url must be an http or https URL/);
    refused({ url: 'ftp://x' }, /url must be an http or https URL, got ftp:/);
    refused({ url: 'http://u:p@x' }, /without credentials/);
    refused({ url: 'http://x', token: '' }, /token must be a non-empty string/);
    refused({ url: 'http://x', token: 'a b' }, /token must be/);
    refused({ url: 'http://x', callAttemptsMax: 0 }, /callAttemptsMax must be between 1 and 100, got 0/);
    refused({ url: 'http://x', requestTimeoutMs: 1.5 }, /requestTimeoutMs must be an integer/);
    refused({ url: 'http://x', callRetryBaseMs: 10_000 }, /callRetryBaseMs \(10000\) must not exceed callRetryMaxMs \(5000\)/);
    refused({ url: 'http://x', callRetries: 3 } as ClientOptions, /unknown client option callRetries/);
  });
});
