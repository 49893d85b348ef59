import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { resolveClasses } from '../../src/main/classes.js';
import { checkTypeScriptLoader } from '../../src/main/typescript-classes.js';
import { isKeepworkError, type KeepworkError } from '../../src/core/errors.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-classes-');

/** A folder with app/counter.js and app/lib/timer.ts; returns the app folder. */
function app(): string {
  const dir = join(tempDir(), 'app');
  mkdirSync(join(dir, 'lib'), { recursive: true });
  writeFileSync(join(dir, 'counter.js'), 'export default {}\n');
  writeFileSync(join(dir, 'lib', 'timer.ts'), 'export default {}\n');
  return dir;
}

const href = (path: string) => pathToFileURL(path).href;

describe('resolveClasses', () => {
  it('takes file URLs, as URL objects or strings, whatever the base', () => {
    const dir = app();
    const asUrl = new URL('counter.js', pathToFileURL(dir + '/'));
    assert.deepEqual(resolveClasses({ A: asUrl, B: asUrl.href }, '/nowhere'), { A: asUrl.href, B: asUrl.href });
  });

  it('resolves relative paths against the working directory by default', () => {
    const dir = app();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      assert.deepEqual(resolveClasses({ Counter: './counter.js' }), { Counter: href(join(dir, 'counter.js')) });
    } finally {
      process.chdir(cwd);
    }
  });

  it('resolves relative paths against a base folder, or beside the file a base URL names (import.meta.url)', () => {
    const dir = app();
    const expected = { Counter: href(join(dir, 'counter.js')), Timer: href(join(dir, 'lib', 'timer.ts')) };
    const classes = { Counter: './counter.js', Timer: 'lib/timer.ts' };
    assert.deepEqual(resolveClasses(classes, dir), expected);
    const mainModule = href(join(dir, 'main.js')); // need not exist
    assert.deepEqual(resolveClasses(classes, mainModule), expected);
    assert.deepEqual(resolveClasses(classes, new URL(mainModule)), expected);
    assert.deepEqual(resolveClasses({ Counter: join(dir, 'counter.js') }, '/elsewhere'), { Counter: expected.Counter });
  });

  it('refuses a missing module, naming the path it looked at, and a URL that is not a file', () => {
    const dir = app();
    assert.throws(
      () => resolveClasses({ Counter: './nope.js' }, dir),
      (e) => isKeepworkError(e, 'BAD_CLASS') && e.message.includes(join(dir, 'nope.js')),
    );
    assert.throws(
      () => resolveClasses({ Counter: new URL('https://example.com/counter.js') }),
      (e) => isKeepworkError(e, 'BAD_CONFIG') && /classes\.Counter: not a file URL/.test(e.message),
    );
    assert.throws(
      () => resolveClasses({ Counter: 42 }),
      (e) => isKeepworkError(e, 'BAD_CONFIG'),
    );
  });
});

describe('checkTypeScriptLoader', () => {
  const js = { Counter: 'file:///app/counter.js' };
  const ts = { Counter: 'file:///app/counter.js', Timer: 'file:///app/lib/timer.mts' };

  it('says to install tsx or compile the classes when a class is TypeScript and tsx is missing', () => {
    assert.throws(
      () => checkTypeScriptLoader(ts, () => false),
      (e) =>
        isKeepworkError(e, 'BAD_CONFIG') &&
        e.message.includes('classes.Timer: file:///app/lib/timer.mts is TypeScript') &&
        e.message.includes('npm install tsx') &&
        e.message.includes('compile your classes') &&
        (e as KeepworkError).details.missing === 'tsx',
    );
  });

  it('passes when tsx is there, and never looks for it when every class is JavaScript', () => {
    checkTypeScriptLoader(ts, () => true);
    checkTypeScriptLoader(js, () => assert.fail('looked for tsx'));
    checkTypeScriptLoader(ts); // this repository has tsx
  });
});
