/**
 * The closing summary of `npm test` (scripts/test-summary-reporter.mjs) names why a test failed:
 * the lines after its error's first (a node's stderr), and the error's cause, cut to a few lines.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

describe('the test summary reporter', () => {
  it("gives a failed test's whole first error and its cause, cut to a dozen lines", () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--test', '--test-reporter=./scripts/test-summary-reporter.mjs', 'test/fixtures/fails-with-cause.ts'],
      // Without the test context this runner gives its children: the inner run reports for itself.
      { encoding: 'utf8', env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
    );
    assert.notEqual(run.status, 0, 'the fixture fails');
    const lines = run.stdout.split('\n').filter((l) => l.startsWith('{'));
    assert.equal(lines.length, 1, run.stdout + run.stderr);
    const { kind, path, reason } = JSON.parse(lines[0]!) as { kind: string; path: string[]; reason: string };
    assert.equal(kind, 'failed');
    assert.deepEqual(path, ['a node dies before serving']);
    assert.match(
      reason,
      /^\[testCodeFailure\] node a exited \(1\) before serving:\n {4}\[stderr\] keepwork: BAD_CONFIG: the real reason\n/,
    );
    assert.match(reason, /… \(\d+ more lines\)$/, 'long errors are cut');
    assert.equal(reason.split('\n').length, 13);
    assert.ok(!reason.includes('caused by'), 'the cause is past the cut here');
  });
});
