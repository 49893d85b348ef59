/**
 * The faults the bucket relay makes by holding what a node sends (bucket-relay.ts): an S3 bucket
 * with the nodes in network namespaces only (a folder bucket has no relay, and is skipped, said so).
 *
 * `staleListHold` (plan.ts `RelayFault`) is the race the alarm index's R3 guards (docs/alarm-index.md:
 * an older owner never deletes an entry of a higher generation), made on real nodes as the simulator
 * makes it (its aimed hang of a stale removal's listing, test/sim/network.ts):
 *
 *   1. in the fault's window, the first per-actor LIST of a stale removal a node S sends
 *      (`…/alarms/<tenant>/<due>/<class>.t/<name hex>/`, src/workers/deliver.ts) of an actor the
 *      workload may arm again (not one it destroyed): S is held from
 *      that request on — its lease renewals too, so its lease runs out while the listing waits
 *   2. `armAfterMs` later (past lease + grace, so S's hold on the actor may be taken): the harness
 *      sets that same alarm time on that actor through another node (`arm`; retried round the
 *      others); the node C that takes the actor, at a higher generation, PUTs its entry at that
 *      time and uploads the link naming it
 *   3. at C's first request after that link's PUT, C is held (the run of its alarm — due already —
 *      waits with the rest, so the link stays the head) and S is released: its LIST lands now and
 *      lists C's entry. With R3, S leaves it; without, S deletes the entry the head names, and the
 *      index check the harness runs at once (`raced`) sees it `missing`
 *   4. C is released `holdMs` after it was held or 3 s after S's removal (its DeleteObjects)
 *      went through (the bucket checked again then), whichever is later — S may meet another fault
 *      on its way —, or 10 s after it
 *      was held if S removes nothing; S is released at the latest `maxHeldMs` after it was held
 *
 * The fault is aimed at a window (a long holdWrites, plan.ts): the held node takes the race's own
 * actors (no op of the workload reaches them) before its writes are held, and an alarm armed on
 * each through it just after is delivered as stale by another node. Only listings of those actors
 * are held; a race that ends without the lister's removal (no node took the actor over, none
 * could set the time again) is tried again on the next such listing while the window is open; a
 * window without one passes with nothing held. Around it, from before the setup until the race's
 * tail, the plan leaves no other fault and every node's bucket profile is calm (`runRelayFaults`):
 * a pause of the lister just after its listing landed, or a bucket that refused the new owner's
 * writes, lost the race before.
 */
import { nameFromHex } from '../../src/core/address.js';
import type { RelayedRequest } from './bucket-relay.js';
import type { FaultWindow } from './faults.js';
import { describeRelayFault, MARGIN_MS, type RelayFault } from './plan.js';
import { sleep } from './workload.js';

/** What the race needs of the relay. */
export interface RelayControl {
  watch(fn: (r: RelayedRequest) => void): void;
  hold(ip: string): void;
  release(ip: string): void;
}

/** The actor and time of a held stale listing. */
export interface RaceTarget {
  tenant: string;
  className: string;
  name: string;
  dueMs: number;
}

export interface RaceHooks {
  /**
   * Whether the race is made on this listing: an actor of the window's own (`fault.slots`) whose
   * alarm time may be set again (one the workload destroyed may not); if not, its listing goes on.
   */
  eligible(target: RaceTarget, fault: RelayFault): boolean;
  /** Set `target.dueMs` on the actor through a node other than `held`; the node chosen, or undefined (none can). */
  arm(target: RaceTarget, held: number): number | undefined;
  /** S released after C was held, and again when S's removal went through: the bucket is worth checking now. */
  raced(target: RaceTarget, held: number, via: number): void;
  log(line: string): void;
}

export interface RaceTimings {
  armAfterMs: number;
  maxHeldMs: number;
}

/** After the held listing, when the alarm time is set again through another node: S's hold may be taken by then. */
export const RACE_ARM_AFTER_MS = MARGIN_MS + 600;
/** The new owner stays held at least this long after the lister's removal went through… */
export const RACE_AFTER_DELETE_MS = 3_000;
/** …and this long at most (the lister may have met another fault, or removes nothing). */
export const RACE_NEW_OWNER_MAX_MS = 10_000;
/** S waits this long at most (its store's attempts outlast it: a retried LIST waits with the rest). */
export const RACE_MAX_HELD_MS = RACE_ARM_AFTER_MS + 6_000;

/** Debugging aid: CHAOS_RACE_TRACE=1 logs every request of every node while a race is under way. */
const TRACE = process.env.CHAOS_RACE_TRACE === '1';

const PREFIX_LIST = /(?:^|\/)alarms\/([^/]+)\/(\d{15})\/([^/]+)\.t\/((?:[0-9a-f]{2})+)\/$/;
const ENTRY_PUT = /\/alarms\/([^/]+)\/(\d{15})\/([^/]+)\.t\/((?:[0-9a-f]{2})+)\/[^/]+$/;
const LINK_PUT = /\/state\/([^/]+)\/([^/]+)\/((?:[0-9a-f]{2})+)\/\d{20}$/;

/** The actor and time of a stale removal's per-actor LIST (deliver.ts `entriesAt`), or undefined. */
export function staleListing(r: RelayedRequest): RaceTarget | undefined {
  if (r.method !== 'GET') return undefined;
  const m = PREFIX_LIST.exec(r.query.get('prefix') ?? '');
  return m ? { tenant: m[1]!, className: m[3]!, name: nameFromHex(m[4]!), dueMs: Number(m[2]) } : undefined;
}

/** Whether `r` PUTs an index entry of the target's actor at its time. */
export function isEntryPut(r: RelayedRequest, t: RaceTarget): boolean {
  const m = r.method === 'PUT' ? ENTRY_PUT.exec(r.path) : null;
  return m !== null && sameActor(m[1]!, m[3]!, m[4]!, t) && Number(m[2]) === t.dueMs;
}

/** Whether `r` PUTs a link of the target's actor. */
export function isLinkPut(r: RelayedRequest, t: RaceTarget): boolean {
  const m = r.method === 'PUT' ? LINK_PUT.exec(r.path) : null;
  return m !== null && sameActor(m[1]!, m[2]!, m[3]!, t);
}

function sameActor(tenant: string, className: string, hex: string, t: RaceTarget): boolean {
  return tenant === t.tenant && className === t.className && nameFromHex(hex) === t.name;
}

/** The lister released, the new owner held until `releaseAt`. */
interface Raced {
  name: 'raced';
  fault: RelayFault;
  target: RaceTarget;
  s: number;
  via: number;
  heldAt: number;
  releaseAt: number;
  /** The lister's DeleteObjects went through. */
  deleted: boolean;
  timer?: NodeJS.Timeout;
}

type Phase =
  | { name: 'off' }
  | { name: 'waiting'; fault: RelayFault }
  | { name: 'listHeld'; fault: RelayFault; s: number; target: RaceTarget; via?: number; entry: boolean; link: boolean }
  | Raced
  | { name: 'done' };

export class StaleListRace {
  private phase: Phase = { name: 'off' };
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Nodes held now, by the race. */
  private readonly heldNodes = new Set<number>();
  readonly stats = { windows: 0, listingsSeen: 0, listingsHeld: 0, armed: 0, raced: 0, retried: 0 };
  /** From each held listing until the last node the race held is released (alarms late in them are excused). */
  readonly windows: FaultWindow<RelayFault>[] = [];

  constructor(
    private readonly relay: RelayControl,
    private readonly ipOf: (node: number) => string,
    private readonly nodeOf: (ip: string) => number | undefined,
    private readonly hooks: RaceHooks,
    private readonly timings: RaceTimings = { armAfterMs: RACE_ARM_AFTER_MS, maxHeldMs: RACE_MAX_HELD_MS },
  ) {
    relay.watch((r) => this.seen(r));
  }

  /** The window open now, if any: a race lost in it waits for the next stale listing. */
  private openFault: RelayFault | undefined;

  /** The fault's window opens: the next stale listing is held. */
  open(fault: RelayFault): void {
    if (this.phase.name !== 'off' && this.phase.name !== 'done') return;
    this.stats.windows++;
    this.openFault = fault;
    this.phase = { name: 'waiting', fault };
  }

  /** The window closes: a race not begun is not begun; one under way runs to its end. */
  close(): void {
    this.openFault = undefined;
    if (this.phase.name === 'waiting') this.phase = { name: 'done' };
  }

  /** A race ended without the lister's removal: the next stale listing is held while the window is open. */
  private lost(): void {
    if (this.openFault) {
      this.stats.retried++;
      this.hooks.log('the race is tried again on the next stale listing in the window');
      this.phase = { name: 'waiting', fault: this.openFault };
    } else this.phase = { name: 'done' };
  }

  /** Everything held goes on; no timer is left. */
  dispose(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const n of [...this.heldNodes]) this.release(n);
    this.phase = { name: 'done' };
  }

  private seen(r: RelayedRequest): void {
    const p = this.phase;
    const node = this.nodeOf(r.from);
    if (node === undefined) return;
    if (TRACE && (p.name === 'listHeld' || p.name === 'raced'))
      this.hooks.log(
        `trace n${node} ${r.method} ${r.path.replace(/^\/[^/]+\/[^/]+\//, '')}${r.query.has('prefix') ? ` prefix=${r.query.get('prefix')}` : ''}${r.query.has('delete') ? ' ?delete' : ''}`,
      );
    if (p.name === 'waiting') {
      const target = staleListing(r);
      if (!target) return;
      this.stats.listingsSeen++;
      if (!this.hooks.eligible(target, p.fault)) return;
      this.hold(node);
      this.stats.listingsHeld++;
      this.windows.push({ fault: p.fault, from: Date.now(), to: Infinity, note: `n${node} held at its listing` });
      this.phase = { name: 'listHeld', fault: p.fault, s: node, target, entry: false, link: false };
      this.hooks.log(`n${node}'s stale listing of ${target.className}/${target.name} at ${target.dueMs} held, n${node} with it`);
      this.after(this.timings.armAfterMs, () => this.armAgain());
      this.after(this.timings.maxHeldMs, () => {
        if (this.phase.name === 'listHeld' && this.heldNodes.has(node)) {
          this.hooks.log(`n${node} released after ${this.timings.maxHeldMs} ms: no node took the actor over and listed its time`);
          this.release(node);
          this.lost();
        }
      });
      return;
    }
    if (p.name === 'raced') {
      // The lister's removal (a DeleteObjects) lands: the new owner stays held a while after it, so
      // the bucket is read while its link is the head, however late the lister got through.
      if (node === p.s && r.method === 'POST' && r.query.has('delete') && !p.deleted) {
        p.deleted = true;
        this.hooks.raced(p.target, p.s, p.via);
        this.releaseAt(
          p,
          Math.min(Math.max(p.heldAt + p.fault.holdMs, Date.now() + RACE_AFTER_DELETE_MS), p.heldAt + RACE_NEW_OWNER_MAX_MS),
        );
      }
      return;
    }
    if (p.name !== 'listHeld' || p.via === undefined || node === p.s) return;
    // The arm is retried round the nodes: the new owner is whichever PUTs the entry.
    if (!p.entry) {
      p.entry = isEntryPut(r, p.target);
      if (p.entry) p.via = node;
    } else if (node !== p.via) return;
    else if (!p.link) p.link = isLinkPut(r, p.target);
    else {
      this.hold(node);
      this.release(p.s);
      this.stats.raced++;
      const now = Date.now();
      const raced: Raced = {
        name: 'raced',
        fault: p.fault,
        target: p.target,
        s: p.s,
        via: node,
        heldAt: now,
        releaseAt: 0,
        deleted: false,
      };
      this.phase = raced;
      this.hooks.log(`n${node} held after its link naming the entry at ${p.target.dueMs}; n${p.s}'s listing goes on`);
      this.hooks.raced(p.target, p.s, node);
      this.releaseAt(raced, now + RACE_NEW_OWNER_MAX_MS);
    }
  }

  /** The new owner goes on at `at` (a later call moves it). */
  private releaseAt(p: Raced, at: number): void {
    if (p.timer) {
      clearTimeout(p.timer);
      this.timers.delete(p.timer);
    }
    p.releaseAt = at;
    p.timer = this.after(at - Date.now(), () => {
      this.release(p.via);
      if (p.deleted) this.phase = { name: 'done' };
      else this.lost();
    });
  }

  private armAgain(): void {
    const p = this.phase;
    if (p.name !== 'listHeld') return;
    const via = this.hooks.arm(p.target, p.s);
    if (via === undefined) {
      this.hooks.log(`no node to set the alarm again through: n${p.s} released`);
      this.release(p.s);
      this.lost();
      return;
    }
    this.stats.armed++;
    p.via = via;
  }

  private hold(n: number): void {
    this.heldNodes.add(n);
    this.relay.hold(this.ipOf(n));
  }

  private release(n: number): void {
    this.heldNodes.delete(n);
    this.relay.release(this.ipOf(n));
    const w = this.windows.at(-1);
    if (w && w.to === Infinity && this.heldNodes.size === 0) w.to = Date.now();
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }
}

/**
 * Opens and closes the race's windows at the plan's times, and turns every node's bucket profile
 * calm in their calm spans (`calm(true)` as the first begins, `calm(false)` as the last of those
 * overlapping ends); resolves when the last has closed (or the run stopped), calm off.
 */
export async function runRelayFaults(
  faults: readonly RelayFault[],
  race: StaleListRace,
  startedAt: number,
  stopped: () => boolean,
  log: (line: string) => void,
  calm: (on: boolean) => void,
): Promise<void> {
  const until = async (t: number) => {
    while (!stopped() && Date.now() < t) await sleep(Math.min(200, t - Date.now()));
  };
  const windows = async () => {
    for (const f of faults) {
      await until(startedAt + f.at);
      if (stopped()) return;
      log(describeRelayFault(f));
      race.open(f);
      await until(startedAt + f.at + f.forMs);
      race.close();
    }
  };
  const calmSpans = async () => {
    for (const span of mergedSpans(faults.map((f) => f.calm))) {
      await until(startedAt + span.from);
      if (stopped()) return;
      log(`+${(span.from / 1_000).toFixed(1)}s every node's bucket profile calm until +${(span.to / 1_000).toFixed(1)}s (a race's span)`);
      calm(true);
      await until(startedAt + span.to);
      calm(false);
    }
  };
  try {
    await Promise.all([windows(), calmSpans()]);
  } finally {
    calm(false);
  }
}

/** Spans in time order, those that overlap merged. */
export function mergedSpans(spans: readonly { from: number; to: number }[]): { from: number; to: number }[] {
  const out: { from: number; to: number }[] = [];
  for (const s of [...spans].sort((a, b) => a.from - b.from)) {
    const last = out.at(-1);
    if (last && s.from <= last.to) last.to = Math.max(last.to, s.to);
    else out.push({ ...s });
  }
  return out;
}
