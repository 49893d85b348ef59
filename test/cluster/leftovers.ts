/** A cluster test file's last check: no node process it started still runs after its tests (any that does is killed). */
import assert from 'node:assert/strict';
import { after } from 'node:test';
import { killLeftovers } from '../../support/cluster/processes.js';

export function checkNoLeftovers(): void {
  after(() => {
    const n = killLeftovers();
    assert.equal(n, 0, `${n} node processes were still running after the tests`);
  });
}
