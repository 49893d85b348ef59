/** FileGate: at most `max` steps run at once, the rest wait in arrival order, and a failed step passes its place on. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FileGate } from '../../src/store/fs/file-gate.js';

describe('FileGate', () => {
  it('never runs more than max steps at once, runs every step, in arrival order past the bound', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }), async (max, fails) => {
        const gate = new FileGate(max);
        let running = 0;
        let peak = 0;
        const started: number[] = [];
        const releases: (() => void)[] = [];
        const steps = fails.map((fail, i) =>
          gate
            .run(async () => {
              started.push(i);
              peak = Math.max(peak, ++running);
              await new Promise<void>((r) => releases.push(r));
              running--;
              if (fail) throw new Error(`step ${i}`);
            })
            .catch(() => undefined),
        );
        while (started.length < fails.length || releases.length > 0) {
          await new Promise((r) => setImmediate(r));
          releases.shift()?.();
        }
        await Promise.all(steps);
        assert.ok(peak <= max, `${peak} at once with max ${max}`);
        assert.deepEqual(
          started,
          fails.map((_, i) => i),
        );
      }),
    );
  });
});
