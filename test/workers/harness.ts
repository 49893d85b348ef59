/**
 * Runs the real event pipeline inline (no worker threads) on a SimClock and a temp data dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimClock } from '../../src/core/clock.js';
import { parseAddress } from '../../src/core/address.js';
import { NotFound } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { SeededRandom } from '../../src/core/random.js';
import { resolveOptions, type KeepworkOptions } from '../../src/main/config.js';
import { DbCache } from '../../src/workers/db-cache.js';
import type { ActorDefinition } from '../../src/workers/define-actor.js';
import type { EventResult } from '../../src/workers/messages.js';
import { runEvent, type PipelineDeps } from '../../src/workers/pipeline.js';

export class InlineActors {
  readonly clock = new SimClock(1_800_000_000_000);
  readonly dataDir = mkdtempSync(join(tmpdir(), 'kw-pipeline-'));
  deps: PipelineDeps;

  constructor(
    readonly classes: Record<string, ActorDefinition>,
    options: KeepworkOptions = {},
  ) {
    this.deps = this.makeDeps(options);
  }

  private makeDeps(options: KeepworkOptions): PipelineDeps {
    const config = resolveOptions(options);
    return {
      clock: this.clock,
      random: new SeededRandom(1),
      config,
      log: silentLogger(),
      dbs: new DbCache(this.dataDir, config.dbCacheMax),
      loadClass: async (name) => {
        const def = this.classes[name];
        if (!def) throw new NotFound(`no class ${name}`);
        return def;
      },
    };
  }

  call(address: string, method: string, ...args: unknown[]): Promise<EventResult> {
    return runEvent(this.deps, { type: 'request', address: parseAddress(address), method, args, durable: false });
  }

  alarm(address: string): Promise<EventResult> {
    return runEvent(this.deps, { type: 'alarm', address: parseAddress(address) });
  }

  async getAlarm(address: string): Promise<number | null> {
    return (await runEvent(this.deps, { type: 'getAlarm', address: parseAddress(address) })).alarmAt;
  }

  /** Closes every database and opens fresh handles: what a node restart does to the data dir. */
  restart(options: KeepworkOptions = {}): void {
    this.deps.dbs.closeAll();
    this.deps = this.makeDeps(options);
  }

  cleanup(): void {
    this.deps.dbs.closeAll();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export function okResult(r: EventResult): unknown {
  if (r.type !== 'ok') throw new Error(`expected ok, got ${r.error.code}: ${r.error.message}`);
  return r.result;
}
