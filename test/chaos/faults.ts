/**
 * The chaos run's fault injector: it applies the plan's faults to the node processes at their
 * planned times, each restart with the node's next bucket profile from the plan, and records the
 * window each fault actually covered (from its start until the node serves again, resumes, or its
 * cut or full disk ends). A fault whose node is not up at its time (still restarting) is skipped
 * and counted, and so is a diskFull when the run has no disks (not root). A node that exited
 * during its fault (a full disk may end it) is started again when the fault ends.
 *
 * With network namespaces (nodes.ts `ChaosNet`) the cuts are made on the wire, as the plan's
 * `wireCut` draws them: a peerCut drops the packets between the node and its peer, or between the
 * node and the harness (every call of the workload to it times out, or lands with its answer
 * lost), in one direction or both; on an S3 bucket a bucketCut and a pauseCut's cut drop those
 * between the node and the bucket. The writes-only cuts, held writes and failing fsyncs stay
 * switches inside the node (no packet says what a request is).
 */
import type { ChaosNodes } from './nodes.js';
import { describeFault, type Fault, type Plan, type RelayFault, type WireCut } from './plan.js';
import { sleep } from './workload.js';

/** A pauseCut cuts its node from the bucket this long before the SIGSTOP. */
export const CUT_BEFORE_PAUSE_MS = 800;

export interface FaultWindow<F extends Fault | RelayFault = Fault> {
  /** A relay fault's window (relay-faults.ts) is its race's, from the held listing on. */
  fault: F;
  from: number;
  /** When the node served again (or resumed); until then, Infinity. */
  to: number;
  note?: string;
}

/** A window of either kind of fault (the alarm checks and the report take both). */
export type AnyWindow = FaultWindow<Fault | RelayFault>;

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
    for (const [i, fault] of this.plan.faults.entries()) {
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
      const wire = this.onWire(fault) ? this.plan.wireCut(i) : undefined;
      const kind = wire ? `${fault.kind} (wire${fault.kind === 'peerCut' && wire.between === 'client' ? ', client' : ''})` : fault.kind;
      this.injected[kind] = (this.injected[kind] ?? 0) + 1;
      this.log(wire ? describeWire(fault, wire) : describeFault(fault));
      const p = this.apply(fault, wire).finally(() => this.running.delete(p));
      this.running.add(p);
    }
    await Promise.all([...this.running]);
  }

  /** Waits for the faults in progress (restarts, resumes) to end. */
  settled(): Promise<void> {
    return Promise.all([...this.running]).then(() => undefined);
  }

  /** Whether the fault is made on the wire: nodes in namespaces, and for a bucket cut, an S3 bucket. */
  private onWire(fault: Fault): boolean {
    const net = this.nodes.net;
    if (!net) return false;
    if (fault.kind === 'peerCut') return true;
    return (fault.kind === 'bucketCut' || fault.kind === 'pauseCut') && net.bucketIp !== undefined;
  }

  private async apply(fault: Fault, wire: WireCut | undefined): Promise<void> {
    const w: FaultWindow = { fault, from: Date.now(), to: Infinity };
    if (wire) w.note = describeWire(fault, wire);
    this.windows.push(w);
    const n = fault.node;
    if (fault.kind === 'pause' || fault.kind === 'pauseCut') {
      if (fault.kind === 'pauseCut') {
        // Cut first: no lease renewal is in flight at the SIGSTOP, to come back with a 412 at SIGCONT.
        if (wire) this.nodes.cutWire(n, 'bucket', 'both');
        else this.nodes.cutBucket(n, true);
        await sleep(CUT_BEFORE_PAUSE_MS);
      }
      this.nodes.pause(n);
      await sleep(fault.pauseMs);
      this.nodes.resume(n);
      if (fault.kind === 'pauseCut') {
        await sleep(fault.cutMs);
        if (wire) this.nodes.healWire(n);
        else this.nodes.cutBucket(n, false);
      }
      w.to = Date.now();
      return;
    }
    if (wire && (fault.kind === 'bucketCut' || fault.kind === 'peerCut')) {
      const to = fault.kind === 'bucketCut' ? 'bucket' : wire.between === 'client' ? 'client' : { peer: fault.peer };
      this.nodes.cutWire(n, to, wire.direction);
      await sleep(fault.forMs);
      this.nodes.healWire(n);
      await this.restartIfGone(w);
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

/** A fault made on the wire, for the log and the fault's window: what it drops, and how. */
export function describeWire(fault: Fault, wire: WireCut): string {
  const when = `+${(fault.at / 1_000).toFixed(1)}s n${fault.node}`;
  if (fault.kind === 'pauseCut') return `${describeFault(fault)} (${dropped(fault.node, 'the bucket', 'both')})`;
  if (fault.kind === 'bucketCut') return `${when} for ${fault.forMs} ms: ${dropped(fault.node, 'the bucket', wire.direction)}`;
  if (fault.kind === 'peerCut')
    return `${when} for ${fault.forMs} ms: ${dropped(fault.node, wire.between === 'client' ? 'the clients' : `n${fault.peer}`, wire.direction)}`;
  return describeFault(fault);
}

function dropped(node: number, peer: string, direction: WireCut['direction']): string {
  const what =
    direction === 'both'
      ? 'both ways'
      : `what n${node} ${direction === 'in' ? 'receives' : 'sends'} (no connection opens; on an open one, requests land and their answers are lost)`;
  return `packets between n${node} and ${peer} dropped on the wire, ${what}`;
}
