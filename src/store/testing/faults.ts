/**
 * FaultStore: any store with the faults a bucket shows under load and on a bad network, on a
 * seeded schedule, for tests, benchmarks and chaos runs. What the caller sees is what a store
 * answers once its own retries are spent (types.ts), so the code above the store meets each
 * fault as it would meet a real one:
 *
 *   unavailable  refused before it reaches the bucket: StoreUnavailable (a 503 SlowDown burst or
 *                an outage that outlasted the retries); `on` says whether reads, writes or all
 *   ambiguous    a write applied, then its answer lost (a reset after the bucket applied it):
 *                AmbiguousWrite, and the object holds the write
 *   late         a write answered AmbiguousWrite at once and applied `lateMs` later (a request
 *                that sat in a queue and landed after its caller moved on); conditions are
 *                checked when it lands, as the bucket would
 *   stallWritesMs  every write waits this long before it is sent; reads go through at once
 *                (the fault a partition cannot make: reads succeed while writes stall)
 *   slowdown     a write refused with a throttle answer (S3's 503 SlowDown) before it is sent:
 *                a throttled StoreUnavailable (store/throttle/signal.ts), as the S3 store raises
 *                it, with `retryAfterMs` when set; only in the first `slowdownMs` of the wrapper's
 *                life (0: always). `slowdown` refuses that share of writes at random;
 *                `slowdownInFlightMax` also refuses every write that arrives with that many
 *                writes already in flight (a partition's capacity: sending faster only earns
 *                more refusals, which is what a retry storm meets)
 *
 *   cutFile      every request refused (StoreUnavailable) while this file exists, reads and writes:
 *                a partition between the node and the bucket that a test (the chaos run) switches
 *                on and off from outside the process, whatever the seed and the windows
 *   cutWritesFile  every write refused while this file exists, reads served: the node reads the
 *                bucket but cannot renew its lease (nor learn that another fenced it)
 *   holdWritesFile  while this file exists, every write of a key outside the alarm index
 *                (`alarms/`) waits, and is sent once the file is gone: requests delayed and
 *                delivered late, their callers waiting all along (as if the bucket's servers of
 *                the state, lease and hold keys stalled while those of the index answered).
 *                Conditions are checked when a write lands
 *   fsyncFailFile  while this file exists, a folder bucket's fsyncs fail with EIO (the kernel's
 *                answer after a lost write-back): the wrapped FsStore's `durability` seam
 *                (`failingFsync`; openStore builds it)
 *   calmFile     while this file exists, the seeded faults above (unavailable, ambiguous, late,
 *                stallWritesMs, slowdown) are off; the switch files still apply (a test that aims
 *                a race at some nodes keeps the rest of the schedule off them meanwhile)
 *
 * Faults happen only inside windows: `burstMs` of every `burstEveryMs` (default: always), by the
 * injected clock, so under SimClock the schedule is virtual time. Each draw comes from the
 * injected Random (SeededRandom for a reproducible run). `injected` counts what was done, and
 * `sent` every request the wrapper was asked to send, refused or not.
 *
 * Opened by `openStore` from `fault+<inner url>?seed=…&unavailable=0.3&on=writes&…`, e.g.
 * `fault+file:///tmp/b?slowdown=0.3&slowdownMs=10000` (30 % of writes throttled for 10 s).
 */
import { existsSync } from 'node:fs';
import type { Clock } from '../../core/clock.js';
import { AmbiguousWrite, BadConfig, StoreUnavailable } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from '../types.js';
import { throttledError } from '../throttle/signal.js';
import { numberParam, splitWrapperUrl } from './wrapper-url.js';
import { DISK_DURABILITY, type FsDurability } from '../fs/io.js';

export const FAULT_SCHEME = 'fault+';

export interface FaultPlan {
  /** Probability (0..1) that a request is refused with StoreUnavailable before it is sent. */
  unavailable: number;
  /** Which requests `unavailable` refuses. */
  on: 'all' | 'reads' | 'writes';
  /** Probability that a write is applied and then answered AmbiguousWrite. */
  ambiguous: number;
  /** Probability that a write is answered AmbiguousWrite at once and applied `lateMs` later. */
  late: number;
  lateMs: number;
  /** Every write waits this long before it is sent. */
  stallWritesMs: number;
  /** Faults only in the first `burstMs` of every `burstEveryMs` (0: always). */
  burstEveryMs: number;
  burstMs: number;
  /** Probability that a write is refused with a throttle answer, within `slowdownMs`. */
  slowdown: number;
  /** Writes in flight past which every write is refused with a throttle answer, within `slowdownMs` (0: no limit). */
  slowdownInFlightMax: number;
  /** The throttle answers come in the first this many ms of the wrapper's life (0: always). */
  slowdownMs: number;
  /** The Retry-After the throttle answers carry (0: none). */
  retryAfterMs: number;
  /** While a file exists at this path, every request is refused ('': never). */
  cutFile: string;
  /** While a file exists at this path, every write is refused ('': never). */
  cutWritesFile: string;
  /** While a file exists at this path, every write of a key outside `alarms/` waits ('': never). */
  holdWritesFile: string;
  /** While a file exists at this path, the wrapped folder bucket's fsyncs fail with EIO ('': never). */
  fsyncFailFile: string;
  /** While a file exists at this path, no seeded fault is injected ('': never). */
  calmFile: string;
}

export const NO_FAULTS: FaultPlan = {
  unavailable: 0,
  on: 'all',
  ambiguous: 0,
  late: 0,
  lateMs: 1_000,
  stallWritesMs: 0,
  burstEveryMs: 0,
  burstMs: 0,
  slowdown: 0,
  slowdownInFlightMax: 0,
  slowdownMs: 0,
  retryAfterMs: 0,
  cutFile: '',
  cutWritesFile: '',
  holdWritesFile: '',
  fsyncFailFile: '',
  calmFile: '',
};

/** How often a held write looks whether its hold is over. */
const HOLD_POLL_MS = 50;

/** The keys of the alarm index, which `holdWritesFile` lets through. */
const INDEX_KEYS = 'alarms/';

type Verb = 'get' | 'head' | 'list' | 'put' | 'delete' | 'deleteMany';

export class FaultStore implements ObjectStore {
  readonly description: string;
  readonly injected = { unavailable: 0, ambiguous: 0, late: 0, stalled: 0, slowdown: 0, cut: 0, held: 0 };
  /** Requests the wrapper was asked to send, refused ones included. */
  sent = 0;
  private writesInFlight = 0;
  private readonly startedAt: number;
  /** Late writes not landed yet: `close` waits for them (nothing is left running). */
  private readonly landing = new Set<Promise<unknown>>();

  constructor(
    private readonly inner: ObjectStore,
    private readonly clock: Clock,
    private readonly random: Random,
    readonly plan: FaultPlan,
  ) {
    this.description = `fault+${inner.description}`;
    this.startedAt = clock.now();
  }

  async get(key: string): Promise<StoredObject | null> {
    this.refuse('get');
    return this.inner.get(key);
  }

  async head(key: string): Promise<ObjectHead | null> {
    this.refuse('head');
    return this.inner.head(key);
  }

  async list(options?: ListOptions): Promise<ListPage> {
    this.refuse('list');
    return this.inner.list(options);
  }

  put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    return this.write('put', [key], () => this.inner.put(key, body, condition));
  }

  delete(key: string): Promise<void> {
    return this.write('delete', [key], () => this.inner.delete(key));
  }

  deleteMany(keys: readonly string[]): Promise<void> {
    return this.write('deleteMany', keys, () => this.inner.deleteMany(keys));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.landing]);
    return this.inner.close();
  }

  private async write<T>(verb: Verb, keys: readonly string[], send: () => Promise<T>): Promise<T> {
    await this.hold(keys);
    if (this.plan.stallWritesMs > 0 && !this.calm()) {
      this.injected.stalled++;
      await this.clock.sleep(this.plan.stallWritesMs);
    }
    this.refuse(verb);
    this.slowDown(verb);
    this.writesInFlight++;
    try {
      return await this.land(verb, send);
    } finally {
      this.writesInFlight--;
    }
  }

  private async land<T>(verb: Verb, send: () => Promise<T>): Promise<T> {
    if (this.draw(this.plan.late)) {
      this.injected.late++;
      const landed = this.clock.sleep(this.plan.lateMs).then(send);
      const tracked = landed.catch(() => undefined).finally(() => this.landing.delete(tracked));
      this.landing.add(tracked);
      throw new AmbiguousWrite(`${verb} sent; no answer came (fault+: it lands in ${this.plan.lateMs} ms)`);
    }
    const result = await send();
    if (this.draw(this.plan.ambiguous)) {
      this.injected.ambiguous++;
      throw new AmbiguousWrite(`${verb} applied; its answer was lost (fault+)`);
    }
    return result;
  }

  /** While the hold switch is on, a write of a key outside the index waits for it to go off. */
  private async hold(keys: readonly string[]): Promise<void> {
    const file = this.plan.holdWritesFile;
    if (file === '' || !existsSync(file) || keys.every((k) => k.startsWith(INDEX_KEYS))) return;
    this.injected.held++;
    while (existsSync(file)) await this.clock.sleep(HOLD_POLL_MS);
  }

  /** A throttle answer to a write, within the slowdown window (see the header). */
  private slowDown(verb: Verb): void {
    const { slowdown, slowdownInFlightMax, slowdownMs, retryAfterMs } = this.plan;
    if ((slowdown <= 0 && slowdownInFlightMax <= 0) || this.calm()) return;
    if (slowdownMs > 0 && this.clock.now() - this.startedAt >= slowdownMs) return;
    const full = slowdownInFlightMax > 0 && this.writesInFlight >= slowdownInFlightMax;
    if (!full && !(slowdown > 0 && this.random.float() < slowdown)) return;
    this.injected.slowdown++;
    throw throttledError(`${verb} refused: 503 SlowDown (fault+)`, retryAfterMs > 0 ? { retryAfterMs } : {});
  }

  private refuse(verb: Verb): void {
    this.sent++;
    const write = verb === 'put' || verb === 'delete' || verb === 'deleteMany';
    if (this.plan.cutFile !== '' && existsSync(this.plan.cutFile)) {
      this.injected.cut++;
      throw new StoreUnavailable(`${verb} refused: the bucket is cut off (fault+ cutFile)`);
    }
    if (write && this.plan.cutWritesFile !== '' && existsSync(this.plan.cutWritesFile)) {
      this.injected.cut++;
      throw new StoreUnavailable(`${verb} refused: the bucket refuses this node's writes (fault+ cutWritesFile)`);
    }
    if (this.plan.on === (write ? 'reads' : 'writes')) return;
    if (!this.draw(this.plan.unavailable)) return;
    this.injected.unavailable++;
    throw new StoreUnavailable(`${verb} refused: SlowDown (fault+)`);
  }

  /** Whether the calm switch is on: no seeded fault now. */
  private calm(): boolean {
    return this.plan.calmFile !== '' && existsSync(this.plan.calmFile);
  }

  /** True with probability `p`, inside a burst window (and not calm). */
  private draw(p: number): boolean {
    if (p <= 0 || this.calm()) return false;
    const { burstEveryMs, burstMs } = this.plan;
    if (burstEveryMs > 0 && this.clock.now() % burstEveryMs >= burstMs) return false;
    return this.random.float() < p;
  }
}

/** Splits `fault+<inner>[?…]` into the inner URL, the plan and the seed (undefined: not seeded). */
export function parseFaultUrl(url: string): { inner: string; plan: FaultPlan; seed: number | undefined } {
  const names = ['seed', 'unavailable', 'on', 'ambiguous', 'late', 'lateMs', 'stallWritesMs', 'burstEveryMs', 'burstMs'];
  names.push(
    'slowdown',
    'slowdownInFlightMax',
    'slowdownMs',
    'retryAfterMs',
    'cutFile',
    'cutWritesFile',
    'holdWritesFile',
    'fsyncFailFile',
    'calmFile',
  );
  const { inner, params } = splitWrapperUrl(url, FAULT_SCHEME, names);
  const p = (name: string, fallback: number, max: number) => numberParam(url, params, name, fallback, 0, max);
  const on = params.get('on') ?? 'all';
  if (on !== 'all' && on !== 'reads' && on !== 'writes') throw new BadConfig(`${JSON.stringify(url)}: on must be all, reads or writes`);
  const plan: FaultPlan = {
    unavailable: p('unavailable', 0, 1),
    on,
    ambiguous: p('ambiguous', 0, 1),
    late: p('late', 0, 1),
    lateMs: p('lateMs', NO_FAULTS.lateMs, 3_600_000),
    stallWritesMs: p('stallWritesMs', 0, 3_600_000),
    burstEveryMs: p('burstEveryMs', 0, 86_400_000),
    burstMs: p('burstMs', 0, 86_400_000),
    slowdown: p('slowdown', 0, 1),
    slowdownInFlightMax: p('slowdownInFlightMax', 0, 1_000_000),
    slowdownMs: p('slowdownMs', 0, 86_400_000),
    retryAfterMs: p('retryAfterMs', 0, 3_600_000),
    cutFile: params.get('cutFile') ?? '',
    cutWritesFile: params.get('cutWritesFile') ?? '',
    holdWritesFile: params.get('holdWritesFile') ?? '',
    fsyncFailFile: params.get('fsyncFailFile') ?? '',
    calmFile: params.get('calmFile') ?? '',
  };
  if (plan.burstEveryMs > 0 && (plan.burstMs <= 0 || plan.burstMs > plan.burstEveryMs))
    throw new BadConfig(`${JSON.stringify(url)}: with burstEveryMs, burstMs must be from 1 to burstEveryMs`);
  const seed = params.has('seed') ? p('seed', 0, 2 ** 31 - 1) : undefined;
  return { inner, plan, seed };
}

/**
 * A folder bucket's fsyncs (fs/io.ts `FsDurability`) that fail with EIO while `switchFile` exists,
 * and are made as usual otherwise: `fault+`'s `fsyncFailFile`. `failed` counts the failures.
 */
export function failingFsync(switchFile: string, disk: FsDurability = DISK_DURABILITY): FsDurability & { failed: number } {
  const eio = (what: string) =>
    Object.assign(new Error(`EIO: i/o error, fsync ${what} (fault+ fsyncFailFile)`), { code: 'EIO', errno: -5, syscall: 'fsync' });
  const d = {
    failed: 0,
    fsyncFile(fd: number): Promise<void> {
      if (!existsSync(switchFile)) return disk.fsyncFile(fd);
      d.failed++;
      return Promise.reject(eio('of a file'));
    },
    fsyncFolder(dir: string): Promise<void> {
      if (!existsSync(switchFile)) return disk.fsyncFolder(dir);
      d.failed++;
      return Promise.reject(eio(dir));
    },
  };
  return d;
}
