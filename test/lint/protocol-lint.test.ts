import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { lintSource } from '../../scripts/lint-protocol.js';

const rulesOf = (code: string) => lintSource('x.ts', code).map((v) => v.rule);

describe('protocol lint', () => {
  const caught: Record<string, string> = {
    'Date.now()': 'const t = Date.now();',
    'Date.now as a value': 'const f = Date.now;',
    'new Date()': 'const d = new Date();',
    'Date()': 'const s = Date();',
    'destructured Date.now': 'const { now } = Date;',
    'Math.random()': 'const r = Math.random();',
    'Math["random"]': 'const r = Math["random"]();',
    setTimeout: 'setTimeout(() => {}, 5);',
    setInterval: 'const h = setInterval(() => {}, 5);',
    'globalThis.setTimeout': 'globalThis.setTimeout(() => {}, 5);',
    'crypto.randomUUID()': "import * as crypto from 'node:crypto'; crypto.randomUUID();",
    'crypto.getRandomValues': 'crypto.getRandomValues(new Uint8Array(4));',
    'import { randomBytes }': "import { randomBytes } from 'node:crypto';",
    'import from node:timers/promises': "import { setTimeout as sleep } from 'node:timers/promises';",
    'performance.now()': 'const t = performance.now();',
  };
  for (const [name, code] of Object.entries(caught)) {
    it(`catches ${name}`, () => assert.ok(rulesOf(code).length > 0, `not caught: ${code}`));
  }

  it('passes injected clocks, dates from values, comments and strings', () => {
    const ok = [
      'const t = clock.now(); clock.setTimer(5, () => {});',
      'const d = new Date(clock.now()); const e = new Date(0);',
      '// Date.now() and Math.random() in a comment',
      "const s = 'Date.now() setTimeout(x)';",
      'const o = { setTimeout: 1 }; o.setTimeout;',
      "import { createHash } from 'node:crypto';",
      'const n = random.int(5); const b = random.bytes(4);',
    ];
    for (const code of ok) assert.deepEqual(rulesOf(code), [], code);
  });

  it('reports the line and column', () => {
    const [v] = lintSource('src/alarms/x.ts', 'const a = 1;\n  const t = Date.now();\n');
    assert.deepEqual({ line: v?.line, column: v?.column }, { line: 2, column: 13 });
  });

  it('fails the command on a Date.now() placed in src/alarms, and passes once it is gone', () => {
    const root = mkdtempSync(join(tmpdir(), 'kw-lint-'));
    try {
      mkdirSync(join(root, 'src/alarms'), { recursive: true });
      mkdirSync(join(root, 'src/main'), { recursive: true });
      writeFileSync(join(root, 'src/main/ok.ts'), 'export const t = Date.now();\n');
      writeFileSync(join(root, 'src/alarms/bad.ts'), 'export const due = () => Date.now() + 1000;\n');
      const run = () => spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint-protocol.ts', '--root', root], { encoding: 'utf8' });
      const bad = run();
      assert.equal(bad.status, 1, bad.stdout + bad.stderr);
      assert.match(bad.stderr, /src\/alarms\/bad\.ts:1:\d+ Date\.now reads the clock/);
      assert.doesNotMatch(bad.stderr, /src\/main/);
      writeFileSync(join(root, 'src/alarms/bad.ts'), 'export const due = (clock: { now(): number }) => clock.now() + 1000;\n');
      assert.equal(run().status, 0);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
