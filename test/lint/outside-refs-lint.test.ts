import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { OUTSIDE_REFS, outsideRefs } from '../../scripts/lint-outside-refs.js';

// Built from pieces, so this file passes the lint it tests.
const SHARED = '..' + '/shared';
const DESIGN = 'DESIGN' + '.md';
const SEED = 'seeds/' + '000_';
const ISSUE = 'issue';
const SESSION = 'session';

describe('outside-references lint', () => {
  it('refuses the shared folder, the design notes and the decision record, with line and column', () => {
    for (const needle of [SHARED, DESIGN, SEED])
      assert.ok(
        OUTSIDE_REFS.some(([n]) => n === needle),
        needle,
      );
    const text = `ok line\nsee ${DESIGN} §4 and ${SHARED}/${SEED}602904a38fa3794b.txt\n`;
    const found = outsideRefs('README.md', text).map((v) => `${v.line}:${v.column} ${v.rule.split(':')[0]}`);
    assert.deepEqual(found, [
      '2:5 points outside the repository',
      '2:22 points outside the repository',
      '2:32 points outside the repository',
    ]);
    assert.deepEqual(outsideRefs('docs/x.md', 'links docs/alarm-index.md and docs/architecture.md'), []);
  });

  it('refuses an issue or a session named by number, in any case, with line and column', () => {
    const text = [
      `// the sweep stops at the cap (${ISSUE} 7)`,
      ` * ${ISSUE.toUpperCase()}S 14 and 15; see ${ISSUE} #16 item 2`,
      `measured in ${SESSION} 19, ${SESSION}s 18 and 19`,
    ].join('\n');
    const found = outsideRefs('src/a.ts', text).map((v) => `${v.line}:${v.column} ${v.rule.split(' (')[0]}`);
    assert.deepEqual(found, [
      `1:32 names an issue or session: "${ISSUE} 7"`,
      `2:4 names an issue or session: "${ISSUE.toUpperCase()}S 14"`,
      `2:26 names an issue or session: "${ISSUE} #16"`,
      `3:13 names an issue or session: "${SESSION} 19"`,
      `3:25 names an issue or session: "${SESSION}s 18"`,
    ]);
    assert.match(outsideRefs('a.md', `${ISSUE} 7`)[0]!.rule, /tracker the repository does not hold/);
  });

  it('leaves the words alone when no number follows them as a reference', () => {
    const fine = [
      `an ${ISSUE} with 3 nodes; open ${ISSUE}s`,
      `t${ISSUE} 5`,
      `bench/results/drain-10k-${SESSION}6.json`,
      `the ${SESSION}: 4 calls`,
    ].join('\n');
    assert.deepEqual(outsideRefs('docs/x.md', fine), []);
  });

  it('fails the lint run (exit 1) on a file that points outside, passes once it is gone', () => {
    const root = mkdtempSync(join(tmpdir(), 'kw-outside-'));
    try {
      mkdirSync(join(root, 'docs'));
      writeFileSync(join(root, 'docs', 'a.md'), 'fine\n');
      const lint = () =>
        spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint-outside-refs.ts', '--root', root], { encoding: 'utf8' });
      assert.equal(lint().status, 0);
      writeFileSync(join(root, 'docs', 'b.md'), `the rules are in ${DESIGN}\n`);
      const bad = lint();
      assert.equal(bad.status, 1);
      assert.match(bad.stderr, new RegExp(`^docs/b\\.md:1:18 points outside the repository: "${DESIGN.replace('.', '\\.')}"`, 'm'));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('fails the lint run (exit 1) on a source comment that names an issue, passes once it says what the code does', () => {
    const root = mkdtempSync(join(tmpdir(), 'kw-outside-'));
    try {
      mkdirSync(join(root, 'src'));
      const file = join(root, 'src', 'sweep.ts');
      const lint = () =>
        spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint-outside-refs.ts', '--root', root], { encoding: 'utf8' });
      writeFileSync(file, `export const CAP = 256;\n/** Offers at most CAP per sweep (${ISSUE} 7). */\n`);
      const bad = lint();
      assert.equal(bad.status, 1, bad.stderr);
      assert.match(bad.stderr, new RegExp(`^src/sweep\\.ts:2:35 names an issue or session: "${ISSUE} 7" \\(`, 'm'));
      assert.match(bad.stderr, /lint-outside-refs: 1 violation\(s\)/);
      writeFileSync(file, `export const CAP = 256;\n/** Offers at most CAP per sweep, so one tenant cannot take the whole queue. */\n`);
      const fixed = lint();
      assert.equal(fixed.status, 0, fixed.stderr);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
