/**
 * Runs the real event pipeline inline (no worker threads) on a SimClock and a temp data dir:
 * InlineActors is one node's actors, `inlineEnvs` a test file's maker of them (each on a bucket
 * and a hold generation, all cleaned up when the file's tests end).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { parseAddress } from '../../src/core/address.js';
import { NotFound } from '../../src/core/errors.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import { SeededRandom } from '../../src/core/random.js';
import { resolveOptions, type KeepworkOptions } from '../../src/core/config.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { ObjectStore } from '../../src/store/types.js';
import Database from 'better-sqlite3';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { ActorSlots, slotsSettings } from '../../src/workers/actor-slots.js';
import type { SpareActorFiles } from '../../src/workers/spare-files.js';
import { NonceSource } from '../../src/alarms/keys.js';
import { SAFE_RULES } from '../../src/alarms/rules.js';
import { defineActor, type ActorContext, type ActorDefinition } from '../../src/workers/define-actor.js';
import type { EventResult } from '../../src/workers/messages.js';
import { runEvent } from '../../src/workers/pipeline.js';
import type { PipelineDeps } from '../../src/workers/deps.js';
import { UploadPace } from '../../src/replication/upload-pace.js';

let nextSeed = 1;

/** A counter for the pipeline's tests: `add(by)` returns the new total, `fail` throws. */
export const Counter = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE c (n INTEGER NOT NULL); INSERT INTO c VALUES (0)'),
  methods: {
    add: (ctx: ActorContext, by: number) => {
      ctx.sql.prepare('UPDATE c SET n = n + ?').run(by);
      return (ctx.sql.prepare('SELECT n FROM c').get() as { n: number }).n;
    },
    fail: () => {
      throw new Error('no');
    },
  },
});

/** An actor whose `arm(inMs)` counts its arms and sets its alarm; `count` reads the count. */
export const Timer = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE t (n INTEGER NOT NULL); INSERT INTO t VALUES (0)'),
  methods: {
    arm: (ctx: ActorContext, inMs: number) => {
      ctx.sql.exec('UPDATE t SET n = n + 1');
      ctx.setAlarm(ctx.now() + inMs);
      return (ctx.sql.prepare('SELECT n FROM t').get() as { n: number }).n;
    },
    count: (ctx: ActorContext) => (ctx.sql.prepare('SELECT n FROM t').get() as { n: number }).n,
  },
  alarm: () => undefined,
});

export class InlineActors {
  deps: PipelineDeps;
  epoch = 1;
  /** The share of time the "worker" was busy (upload-pace.ts): 0 keeps the window at replicationDelayMs. */
  busy = 0;
  /** What the replicas see as this node's LeaseView (tests flip it). */
  leaseValid = true;
  /** The hold generation events run under (a real node gets it from its hold). */
  generation = 0;
  /** New actors' files made ahead (the worker's spare-files.ts); taken up by the next makeDeps (restart, crash). */
  spares: SpareActorFiles | undefined;

  constructor(
    readonly classes: Record<string, ActorDefinition>,
    options: KeepworkOptions = {},
    readonly store: ObjectStore = new MemoryStore(),
    readonly dataDir: string = mkdtempSync(join(tmpdir(), 'kw-pipeline-')),
    readonly clock: SimClock = new SimClock(1_800_000_000_000),
    /** Where the pipeline logs (silent unless a test captures it). */
    readonly log: Logger = silentLogger(),
  ) {
    this.deps = this.makeDeps(options);
  }

  private makeDeps(options: KeepworkOptions): PipelineDeps {
    const config = resolveOptions(options);
    const random = new SeededRandom(nextSeed++);
    const log = this.log;
    const writer = { nodeId: 'inline', epoch: this.epoch };
    return {
      clock: this.clock,
      random,
      config,
      log,
      store: this.store,
      nonces: new NonceSource(random),
      rules: SAFE_RULES,
      slots: new ActorSlots(this.dataDir, slotsSettings(config, { spares: this.spares }), {
        store: this.store,
        clock: this.clock,
        random,
        config,
        log,
        writer,
        leaseValid: () => this.leaseValid,
        pace: new UploadPace(config, () => this.busy, this.clock),
      }),
      loadClass: async (name) => {
        const def = this.classes[name];
        if (!def) throw new NotFound(`no class ${name}`);
        return def;
      },
    };
  }

  call(address: string, method: string, ...args: unknown[]): Promise<EventResult> {
    return runEvent(this.deps, {
      type: 'request',
      address: parseAddress(address),
      method,
      args,
      durable: false,
      generation: this.generation,
    });
  }

  alarm(address: string): Promise<EventResult> {
    return runEvent(this.deps, { type: 'alarm', address: parseAddress(address), generation: this.generation });
  }

  deliver(address: string, dueMs: number): Promise<EventResult> {
    return runEvent(this.deps, { type: 'deliver', address: parseAddress(address), dueMs, generation: this.generation });
  }

  async getAlarm(address: string): Promise<number | null> {
    return (await runEvent(this.deps, { type: 'getAlarm', address: parseAddress(address), generation: this.generation })).alarmAt;
  }

  callDurable(address: string, method: string, ...args: unknown[]): Promise<EventResult> {
    return this.durable(undefined, address, method, args);
  }

  /** A durable call with an idempotency key (src/workers/idempotency.ts). */
  callOnce(key: string, address: string, method: string, ...args: unknown[]): Promise<EventResult> {
    return this.durable(key, address, method, args);
  }

  private durable(key: string | undefined, address: string, method: string, args: unknown[]): Promise<EventResult> {
    return runEvent(this.deps, {
      type: 'request',
      address: parseAddress(address),
      method,
      args,
      durable: true,
      generation: this.generation,
      ...(key === undefined ? {} : { idempotencyKey: key }),
    });
  }

  /** Closes every actor (flushed) and opens fresh handles: what a clean node restart does. */
  async restart(options: KeepworkOptions = {}): Promise<void> {
    await this.deps.slots.closeAll();
    this.epoch++;
    this.deps = this.makeDeps(options);
  }

  /**
   * `read` of the actor's file, once the actor is closed (flushed; its handle holds the file's
   * lock: actor-db.ts); its next event opens it again.
   */
  async readClosed<T>(address: string, read: (db: Database.Database) => T): Promise<T> {
    const a = parseAddress(address);
    await this.deps.slots.close(a);
    const db = new Database(actorDbPath(this.dataDir, a), { readonly: true, fileMustExist: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }

  /**
   * A kill -9 and a restart on the same data dir: the actors' files as the kill leaves them, fresh
   * handles and a new epoch. The old handles are closed (their EXCLUSIVE locks would refuse the new
   * ones: actor-db.ts) and the files put back as they were before (a close folds the WAL into the
   * file, which a kill does not do). Their replicas must have no upload pending (a long
   * replicationDelayMs).
   */
  crash(options: KeepworkOptions = {}): void {
    const left = filesUnder(join(this.dataDir, 'actors'));
    this.deps.slots.dropAll();
    putBack(join(this.dataDir, 'actors'), left);
    this.epoch++;
    this.deps = this.makeDeps(options);
  }

  async cleanup(): Promise<void> {
    await this.deps.slots.closeAll();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Every file under `root` (relative path → bytes). */
function filesUnder(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  if (!existsSync(root)) return files;
  for (const d of readdirSync(root, { recursive: true, withFileTypes: true }))
    if (d.isFile()) files.set(relative(root, join(d.parentPath, d.name)), readFileSync(join(d.parentPath, d.name)));
  return files;
}

/** Makes the files under `root` what `files` holds: rewritten, and those not in it removed. */
function putBack(root: string, files: Map<string, Buffer>): void {
  for (const [path, bytes] of filesUnder(root)) {
    const was = files.get(path);
    if (!was) rmSync(join(root, path));
    else if (!was.equals(bytes)) writeFileSync(join(root, path), was);
  }
  for (const [path, bytes] of files) if (!existsSync(join(root, path))) writeFileSync(join(root, path), bytes);
}

export function okResult(r: EventResult): unknown {
  if (r.type !== 'ok') throw new Error(`expected ok, got ${r.error.code}: ${r.error.message}`);
  return r.result;
}

/**
 * A maker of InlineActors for a test file, each cleaned up (the newest first) when the file's
 * tests end: `env(store, generation)` runs `classes` with `options` on that bucket under that hold
 * generation, in a data dir of its own or `dataDir` (another's, to restart on it), on its own
 * SimClock or `clock` (one virtual time for several nodes).
 */
export function inlineEnvs(
  classes: Record<string, ActorDefinition>,
  options: KeepworkOptions = {},
): (store: ObjectStore, generation: number, at?: { dataDir?: string; clock?: SimClock }) => InlineActors {
  const made: InlineActors[] = [];
  after(async () => {
    for (const e of made.reverse()) await e.cleanup();
  });
  return (store, generation, at = {}) => {
    const e = new InlineActors(classes, options, store, at.dataDir, at.clock);
    e.generation = generation;
    made.push(e);
    return e;
  };
}
