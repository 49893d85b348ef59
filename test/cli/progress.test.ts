/** The CLI's progress line (progress.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Progress } from '../../src/cli/progress.js';

describe('progress', () => {
  it('rewrites one line on a terminal at most every interval, and ends it', () => {
    let t = 0;
    const out: string[] = [];
    const p = new Progress({ isTTY: true, write: (s) => out.push(s) }, () => t, 250, 5_000);
    p.update('a');
    t = 300;
    p.update('b');
    t = 400;
    p.update('c');
    p.done();
    assert.deepEqual(out, ['\r\x1b[Kb', '\n']);
  });

  it('prints plain lines, rarely, elsewhere', () => {
    let t = 0;
    const out: string[] = [];
    const p = new Progress({ isTTY: false, write: (s) => out.push(s) }, () => t, 250, 5_000);
    t = 1_000;
    p.update('a');
    t = 6_000;
    p.update('b');
    p.done();
    assert.deepEqual(out, ['b\n']);
  });
});
