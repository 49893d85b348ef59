import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { checkClasses, classLoader } from '../../src/workers/class-loader.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-classes-');
const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;

/** Writes `source` as a module file in a fresh folder; its file URL and path. */
function moduleFile(name: string, source: string): { url: string; path: string } {
  const path = join(tempDir(), name);
  writeFileSync(path, source);
  return { url: pathToFileURL(path).href, path };
}

describe('class loader', () => {
  it('accepts a defineActor class, in TypeScript through tsx and in plain JS', async () => {
    const js = moduleFile('ok.mjs', 'export default { methods: { hi() { return 1 } } }');
    await checkClasses({ Probe: PROBE, Plain: js.url });
    assert.equal(typeof (await classLoader({ Probe: PROBE })('Probe')).methods.slowIncrement, 'function');
  });

  const bad: Array<[string, string, string, RegExp]> = [
    ['no default export', 'nodefault.mjs', 'export const x = 1', /it has no default export \(end it with `export default defineActor/],
    [
      'a default export that is not a definition',
      'notdef.mjs',
      'export default 42',
      /not a defineActor definition: the definition must be an object/,
    ],
    [
      'methods that are not functions',
      'badmethod.mjs',
      'export default { methods: { a: 1 } }',
      /not a defineActor definition: methods.a must be a function/,
    ],
    ['a module that throws when loaded', 'throws.mjs', 'throw new Error("boom at load")', /cannot load it: boom at load/],
    ['a module with a syntax error', 'syntax.ts', 'export default {', /cannot load it: /],
  ];
  for (const [what, file, source, message] of bad) {
    it(`refuses ${what} with BAD_CLASS naming the class, the file and the problem`, async () => {
      const m = moduleFile(file, source);
      await assert.rejects(
        checkClasses({ Probe: PROBE, Bad: m.url }),
        (e: { code: string; message: string; details: Record<string, unknown> }) => {
          assert.equal(e.code, 'BAD_CLASS');
          assert.ok(e.message.startsWith(`actor class Bad (${m.path}): `), e.message);
          assert.match(e.message, message);
          assert.equal(e.details.className, 'Bad');
          assert.equal(e.details.path, m.path);
          return true;
        },
      );
    });
  }

  it('names every bad class in one error', async () => {
    const a = moduleFile('a.mjs', 'export const x = 1');
    const b = moduleFile('b.mjs', 'export default { methods: null }');
    await assert.rejects(
      checkClasses({ A: a.url, Probe: PROBE, B: b.url }),
      (e: { code: string; message: string; details: { classes: unknown[] } }) => {
        assert.equal(e.code, 'BAD_CLASS');
        assert.match(e.message, /^2 actor classes are bad:/);
        assert.ok(e.message.includes(a.path) && e.message.includes(b.path), e.message);
        assert.deepEqual(
          e.details.classes.map((d) => (d as { className: string }).className),
          ['A', 'B'],
        );
        return true;
      },
    );
  });

  it('the worker loader refuses an unknown class with NOT_FOUND and a bad module with BAD_CLASS', async () => {
    const m = moduleFile('nodefault.mjs', 'export const x = 1');
    const load = classLoader({ Bad: m.url });
    await assert.rejects(load('Other'), { code: 'NOT_FOUND' });
    await assert.rejects(load('Bad'), { code: 'BAD_CLASS' });
  });
});
