/**
 * The chaos run's fault injector: it applies the plan's faults to the node processes at their
 * planned times, each restart with the node's next bucket profile from the plan, and records the
 * window each fault actually covered (from its start until the node serves again, resumes, or its
 * cut or full disk ends). A fault whose node is not up at its time (still restarting) is skipped
 * and counted, and so is a diskFull when the run has no disks (not root). A node that exited
 * during its fault (a full disk may end it) is started again when the fault ends.
 */
import type { ChaosNodes } from './nodes.js';
import { describeFault, type Fault, type Plan } from './plan.js';
import { sleep } from './workload.js';

/** A pauseCut cuts its node from the bucket this long before the SIGSTOP. */
export const CUT_BEFORE_PAUSE_MS = 800;

export interface FaultWindow {
  fault: Fault;
  from: number;
  /** When the node served again (or resumed); until then, Infinity. */
  to: number;
  note?: string;
}

export class FaultInjector {
  readonly windows: FaultWindow[] = [];
  readonly skipped: Fault[] = [];
  /** diskFull faults skipped for want of disks (not root). */
  noDisk = 0;
  readonly injected: Record<string, number> = {};
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly plan: Plan,
    private readonly nodes: ChaosNodes,
    private readonly log: (line: string) => void,
    /** Told when a holdWrites fault lets its writes go (the run checks the bucket soon after). */
    private readonly onRelease: (fault: Fault) => void = () => undefined,
  ) {}

  async run(startedAt: number, stopped: () => boolean): Promise<void> {
    for (const fault of this.plan.faults) {
      const wait = startedAt + fault.at - Date.now();
      if (wait > 0) await sleep(wait);
      if (stopped()) break;
      if (this.nodes.state(fault.node) !== 'up') {
        this.skipped.push(fault);
        this.log(`skipped (node not up): ${describeFault(fault)}`);
        continue;
      }
      if (fault.kind === 'diskFull' && !this.nodes.disks) {
        this.noDisk++;
        this.log(`skipped (no disks: not root): ${describeFault(fault)}`);
        continue;
      }
      if (fault.kind === 'fsyncFail' && !this.nodes.folderBucket) {
        this.skipped.push(fault);
        this.log(`skipped (not a folder bucket): ${describeFault(fault)}`);
        continue;
      }
      this.injected[fault.kind] = (this.injected[fault.kind] ?? 0) + 1;
      this.log(describeFault(fault));
      const p = this.apply(fault).finally(() => this.running.delete(p));
      this.running.add(p);
    }
    await Promise.all([...this.running]);
  }

  /** Waits for the faults in progress (restarts, resumes) to end. */
  settled(): Promise<void> {
    return Promise.all([...this.running]).then(() => undefined);
  }

  private async apply(fault: Fault): Promise<void> {
    const w: FaultWindow = { fault, from: Date.now(), to: Infinity };
    this.windows.push(w);
    const n = fault.node;
    if (fault.kind === 'pause' || fault.kind === 'pauseCut') {
      if (fault.kind === 'pauseCut') {
        // Cut first: no lease renewal is in flight at the SIGSTOP, to come back with a 412 at SIGCONT.
        this.nodes.cutBucket(n, true);
        await sleep(CUT_BEFORE_PAUSE_MS);
      }
      this.nodes.pause(n);
      await sleep(fault.pauseMs);
      this.nodes.resume(n);
      if (fault.kind === 'pauseCut') {
        await sleep(fault.cutMs);
        this.nodes.cutBucket(n, false);
      }
      w.to = Date.now();
      return;
    }
    if (fault.kind === 'bucketCut' || fault.kind === 'writeCut') {
      const how = fault.kind === 'writeCut' ? 'writes' : 'all';
      this.nodes.cutBucket(n, true, how);
      await sleep(fault.forMs);
      this.nodes.cutBucket(n, false, how);
      await this.restartIfGone(w);
      return;
    }
    if (fault.kind === 'peerCut') {
      const urls = { n: this.nodes.lastUrl(n)!, m: this.nodes.lastUrl(fault.peer) };
      if (!urls.m) {
        w.note = `n${fault.peer} never served: nothing to cut`;
        w.to = Date.now();
        return;
      }
      const cut = { n: urls.n, m: urls.m };
      this.nodes.cutPeers(n, fault.peer, true, cut);
      await sleep(fault.forMs);
      this.nodes.cutPeers(n, fault.peer, false, cut);
      w.to = Date.now();
      return;
    }
    if (fault.kind === 'holdWrites' || fault.kind === 'fsyncFail') {
      const set = (on: boolean) => (fault.kind === 'holdWrites' ? this.nodes.holdWrites(n, on) : this.nodes.failFsync(n, on));
      set(true);
      await sleep(fault.forMs);
      set(false);
      if (fault.kind === 'holdWrites') this.onRelease(fault);
      await this.restartIfGone(w);
      return;
    }
    if (fault.kind === 'diskFull') {
      const bytes = this.nodes.disks!.fill(n);
      w.note = `${bytes} bytes written to fill it`;
      await sleep(fault.forMs);
      this.nodes.disks!.free(n);
      await this.restartIfGone(w);
      return;
    }
    if (fault.kind === 'kill') await this.nodes.kill(n);
    else await this.nodes.stop(n);
    await sleep(fault.downMs);
    await this.restart(w, fault.kind === 'kill' && fault.freshDir);
  }

  /** The end of a cut or a full disk: a node that exited meanwhile is started again. */
  private async restartIfGone(w: FaultWindow): Promise<void> {
    if (this.nodes.state(w.fault.node) !== 'down') {
      w.to = Date.now();
      return;
    }
    this.exitedInFault[w.fault.kind] = (this.exitedInFault[w.fault.kind] ?? 0) + 1;
    this.log(`n${w.fault.node} exited during its fault (${w.fault.kind}): starting it again`);
    await this.restart(w, false);
  }

  private async restart(w: FaultWindow, freshDir: boolean): Promise<void> {
    const n = w.fault.node;
    const profile = this.plan.profile(n, this.nodes.runs(n));
    try {
      await this.nodes.start(n, profile, freshDir);
    } catch (e) {
      w.note = `restart failed: ${(e as Error).message.split('\n')[0]}`;
      this.log(`n${n} ${w.note}`);
      return;
    }
    w.to = Date.now();
    this.log(`n${n} serving again as ${this.nodes.nodeId(n)} (bucket ${profile.name}) after ${w.to - w.from} ms`);
  }

  /** Nodes that exited during a fault of this kind (and were started again). */
  readonly exitedInFault: Record<string, number> = {};
}
