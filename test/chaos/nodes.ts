/**
 * The chaos run's node processes (test/chaos/node-entry.ts, one per slot), spawned and logged as
 * the cluster tests' are (support/cluster/processes.ts: every child is killed when this process
 * ends, and each child kills itself once this process is gone).
 *
 *   start(n, profile)  a new run of slot n: its data dir (the same, or a fresh one with a new
 *                      node id; on the slot's small disk when there are disks), its bucket URL
 *                      wrapped in fault+ by the profile and the slot's cut switch, its clock
 *                      offset from the plan; resolves serving
 *   kill(n) · stop(n)  SIGKILL / SIGTERM, waited for (bounded)
 *   pause(n) · resume(n)  SIGSTOP / SIGCONT
 *   cutBucket(n, on) · cutPeers(n, m, on)  the partition switches (cuts.ts)
 *   cutWire(n, to, direction) · healWire(n)  with network namespaces: packets dropped in slot n's
 *                      namespace, to and from a peer's, the harness's or the bucket's address
 *   holdWrites(n, on) · failFsync(n, on)   the held writes and the failing fsyncs (cuts.ts)
 *   calm(n, on)        the slot's bucket profile off (a race's calm span)
 *   url(n)             the slot's URL while it is up (not paused), else undefined
 *   disposeAll()       SIGCONT + SIGKILL whatever still runs
 *
 * A node that exits on its own (a full disk may end it) turns its slot `down` and is counted.
 *
 * With network namespaces (`ChaosNet`), slot n's every run is in namespace `n<n>` of the lab
 * (test/cluster/netns.ts), listening on its address there (open, without tokens: the cuts are
 * the subject, test/cluster/cluster-auth.test.ts the doors), and the address stays the slot's
 * across runs, so a cut holds across a restart.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { ClusterNode } from '../../support/cluster/node.js';
import { spawnLogged } from '../../support/cluster/processes.js';
import { REPO } from '../../support/repo.js';
import { bucketCutFile, calmFile, fsyncFailFile, holdWritesFile, peerCutFile, writeCutFile } from './cuts.js';
import type { SlotDisks } from './disks.js';
import type { Lab } from '../cluster/netns.js';
import type { EntrySeams } from './node-entry.js';
import { faultUrl, SKEW_BEYOND_MS, TIMINGS, type BucketProfile, type Unsafe } from './plan.js';

const ENTRY = ['--import', 'tsx', '--import', join(REPO, 'support/die-with-parent.mjs'), join(REPO, 'test/chaos/node-entry.ts')];
const CLASS = join(REPO, 'test/fixtures/classes/chaos-ledger.ts');
const START_BOUND_MS = 60_000;
const START_TRIES = 5;

export type SlotState = 'up' | 'paused' | 'down' | 'starting';

/** The slots' network namespaces (run.ts), when the run has them. */
export interface ChaosNet {
  lab: Lab;
  /** The address the nodes reach the bucket at (an S3 bucket's relay, bucket-relay.ts); none for a folder. */
  bucketIp?: string;
}

/** What a wire cut separates slot n from: a peer slot, the harness (the clients), or the bucket. */
export type WireEnd = { peer: number } | 'client' | 'bucket';

interface Slot {
  node?: ClusterNode;
  state: SlotState;
  runs: number;
  /** Fresh data dirs taken so far (each under a node id of its own). */
  fresh: number;
  profile?: BucketProfile;
  clockOffsetMs: number;
}

export class ChaosNodes {
  private readonly slots: Slot[];

  constructor(
    private readonly root: string,
    private readonly bucket: string,
    count: number,
    private readonly unsafe: Unsafe | undefined,
    /** The planned clock offset of slot n's run-th start. */
    private readonly clockOffset: (n: number, run: number) => number,
    /** The slots' small disks (diskFull faults); undefined: data dirs in the run's folder. */
    readonly disks: SlotDisks | undefined,
    /** The slots' network namespaces; undefined: every node in this one (cuts are switches). */
    readonly net?: ChaosNet,
  ) {
    this.slots = Array.from({ length: count }, () => ({ state: 'down' as SlotState, runs: 0, fresh: 0, clockOffsetMs: 0 }));
    for (let n = 0; n < count; n++) mkdirSync(this.cutDir(n), { recursive: true });
  }

  /** Slot n's partition switches (cuts.ts); the same folder for every run of the slot. */
  cutDir(n: number): string {
    return join(this.root, 'cuts', `n${n}`);
  }

  /** Cuts slot n off from the bucket (every request refused; `writes`: every write), or heals it. */
  cutBucket(n: number, on: boolean, how: 'all' | 'writes' = 'all'): void {
    this.switchFile((how === 'writes' ? writeCutFile : bucketCutFile)(this.cutDir(n)), on);
  }

  /** Holds slot n's bucket writes outside the index (they land when it is switched off), or lets them go. */
  holdWrites(n: number, on: boolean): void {
    this.switchFile(holdWritesFile(this.cutDir(n)), on);
  }

  /** Slot n's fsyncs of the folder bucket fail with EIO, or no longer do. */
  failFsync(n: number, on: boolean): void {
    this.switchFile(fsyncFailFile(this.cutDir(n)), on);
  }

  /** Slot n's bucket profile injects nothing (a race's calm span, relay-faults.ts), or its faults again. */
  calm(n: number, on: boolean): void {
    this.switchFile(calmFile(this.cutDir(n)), on);
  }

  /** Whether the bucket is a folder (the fsyncFail fault's reach). */
  get folderBucket(): boolean {
    return this.bucket.startsWith('file://');
  }

  private switchFile(file: string, on: boolean): void {
    if (on) writeFileSync(file, '');
    else rmSync(file, { force: true });
  }

  /**
   * Cuts the forwards between slots n and m both ways (by their URLs now: a node that restarts
   * meanwhile listens on a new port, out of the cut), or heals them.
   */
  cutPeers(n: number, m: number, on: boolean, urls: { n: string; m: string }): void {
    const files = [peerCutFile(this.cutDir(n), urls.m), peerCutFile(this.cutDir(m), urls.n)];
    for (const f of files) {
      if (on) writeFileSync(f, '');
      else rmSync(f, { force: true });
    }
  }

  /** Drops the packets between slot n and `to` in slot n's namespace (`in`: what n receives; `out`: what it sends). */
  cutWire(n: number, to: WireEnd, direction: 'both' | 'in' | 'out'): void {
    const { lab, bucketIp } = this.net!;
    const ip = to === 'client' ? lab.rootIp : to === 'bucket' ? bucketIp : lab.host(slotHost(to.peer)).ip;
    if (ip === undefined) throw new Error('a bucket cut on the wire needs an S3 bucket (a folder is no network)');
    lab.cut(slotHost(n), [ip], direction);
  }

  /** Every drop rule of slot n's namespace removed. */
  healWire(n: number): void {
    this.net!.lab.heal(slotHost(n));
  }

  /** The slot's node URL whatever its state (paused, or its process gone), if it ever served. */
  lastUrl(n: number): string | undefined {
    return this.slots[n]!.node?.url || undefined;
  }

  clockOffsetMs(n: number): number {
    return this.slots[n]!.clockOffsetMs;
  }

  /** The clock offset of every node run started. */
  readonly offsetsUsed: number[] = [];

  /** Nodes that exited on their own (not killed or stopped by the harness). */
  exitedOnTheirOwn = 0;

  get count(): number {
    return this.slots.length;
  }

  state(n: number): SlotState {
    return this.slots[n]!.state;
  }

  url(n: number): string | undefined {
    const s = this.slots[n]!;
    return s.state === 'up' ? s.node?.url : undefined;
  }

  /** The URL of a paused node (its requests wait in the socket backlog until it resumes). */
  pausedUrl(n: number): string | undefined {
    const s = this.slots[n]!;
    return s.state === 'paused' ? s.node?.url : undefined;
  }

  profile(n: number): BucketProfile | undefined {
    return this.slots[n]!.profile;
  }

  runs(n: number): number {
    return this.slots[n]!.runs;
  }

  nodeId(n: number): string {
    const s = this.slots[n]!;
    return s.fresh === 0 ? `n${n}` : `n${n}f${s.fresh}`;
  }

  /** Every node process started so far (for the logs). */
  readonly all: ClusterNode[] = [];

  /** Called as slot n's `run`-th start (0: the first) begins, before its process is spawned (the relay's wire faults, run.ts). */
  onStart: ((n: number, run: number) => void) | undefined;

  /** Starts refused (a bucket fault met by the node's first writes: it exits, as it should). */
  startsRefused = 0;

  /**
   * Starts slot n's next run; a start the bucket's faults refuse (or that hangs past the bound)
   * is tried again, up to START_TRIES times, each with the fault+ seed moved on (or it would draw
   * the same fault).
   */
  async start(n: number, profile: BucketProfile, freshDir = false): Promise<void> {
    if (freshDir) this.slots[n]!.fresh++;
    for (let attempt = 0; ; attempt++) {
      const query = profile.query.replace(/seed=(\d+)/, (_, seed: string) => `seed=${Number(seed) + attempt}`);
      try {
        return await this.startOnce(n, { ...profile, query });
      } catch (e) {
        if (attempt + 1 >= START_TRIES || !/exited \(1\) before serving|did not start within/.test((e as Error).message)) throw e;
        this.startsRefused++;
      }
    }
  }

  private async startOnce(n: number, profile: BucketProfile): Promise<void> {
    const s = this.slots[n]!;
    const nodeId = this.nodeId(n);
    const dataDir = join(this.disks?.dir(n) ?? this.root, nodeId);
    const options = {
      ...TIMINGS,
      dataDir,
      bucket: faultUrl(this.bucket, profile, {
        cutFile: bucketCutFile(this.cutDir(n)),
        cutWritesFile: writeCutFile(this.cutDir(n)),
        holdWritesFile: holdWritesFile(this.cutDir(n)),
        calmFile: calmFile(this.cutDir(n)),
        ...(this.folderBucket ? { fsyncFailFile: fsyncFailFile(this.cutDir(n)) } : {}),
      }),
      port: 0,
      nodeId,
      classes: { ChaosLedger: CLASS },
      ...(this.net ? { host: this.net.lab.host(slotHost(n)).ip, insecureNoAuth: true } : {}),
    };
    const logPath = join(this.root, 'logs', `${nodeId}.log`);
    const clockOffsetMs = this.unsafe === 'skewBeyondBound' && n === 0 ? SKEW_BEYOND_MS : this.clockOffset(n, s.runs);
    const seams: EntrySeams = {
      cutDir: this.cutDir(n),
      ...(this.unsafe ? { unsafe: this.unsafe } : {}),
      ...(clockOffsetMs ? { clockOffsetMs } : {}),
    };
    this.onStart?.(n, s.runs);
    s.state = 'starting';
    s.runs++;
    s.profile = profile;
    s.clockOffsetMs = clockOffsetMs;
    this.offsetsUsed.push(clockOffsetMs);
    const launcher = this.net?.lab.host(slotHost(n)).launcher ?? [];
    const child = spawnLogged([...ENTRY, JSON.stringify(options), JSON.stringify(seams)], logPath, launcher);
    const node = new ClusterNode(nodeId, dataDir, logPath, child);
    s.node = node;
    this.all.push(node);
    void node.exited.then(() => {
      if (s.node !== node || (s.state !== 'up' && s.state !== 'paused')) return;
      s.state = 'down';
      this.exitedOnTheirOwn++;
    });
    try {
      node.url = await servingUrl(child, node);
    } catch (e) {
      if (node.running) {
        child.kill('SIGKILL');
        await node.exited;
      }
      s.state = 'down';
      throw e;
    }
    s.state = 'up';
  }

  async kill(n: number): Promise<void> {
    const s = this.slots[n]!;
    s.state = 'down';
    if (s.node?.running) {
      s.node.child.kill('SIGCONT');
      await s.node.killAndWait('SIGKILL');
    }
  }

  /** A clean stop (holds and lease released); SIGKILL if it takes too long. */
  async stop(n: number): Promise<void> {
    const s = this.slots[n]!;
    s.state = 'down';
    if (!s.node?.running) return;
    await s.node.killAndWait('SIGTERM', 30_000).catch(() => s.node!.killAndWait('SIGKILL'));
  }

  pause(n: number): void {
    const s = this.slots[n]!;
    if (!s.node?.running) return;
    s.node.kill('SIGSTOP');
    s.state = 'paused';
  }

  resume(n: number): void {
    const s = this.slots[n]!;
    if (s.state !== 'paused') return;
    if (s.node?.running) s.node.kill('SIGCONT');
    s.state = s.node?.running ? 'up' : 'down';
  }

  /** Any node process still running, killed (SIGCONT first); how many there were. */
  async disposeAll(): Promise<number> {
    let n = 0;
    for (const node of this.all) {
      if (!node.running) continue;
      n++;
      node.child.kill('SIGCONT');
      node.child.kill('SIGKILL');
      await node.exited;
    }
    for (const s of this.slots) s.state = 'down';
    return n;
  }
}

/** Slot n's host in the lab (its namespace). */
export const slotHost = (n: number) => `n${n}`;

/** The URL of the node's `(epoch N) serving URL` line on stderr; rejects if it exits first or takes too long. */
function servingUrl(child: ChildProcess, node: ClusterNode): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`node ${node.nodeId} did not start within ${START_BOUND_MS} ms:\n${node.logTail(10)}`)),
      START_BOUND_MS,
    );
    const onData = (d: Buffer) => {
      err += d.toString();
      const m = /epoch \d+\) serving (http:\/\/\S+)/.exec(err);
      if (!m) return;
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      resolve(m[1]!);
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`node ${node.nodeId} exited (${code ?? signal}) before serving:\n${node.logTail()}`));
    });
  });
}
