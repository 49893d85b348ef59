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
});
