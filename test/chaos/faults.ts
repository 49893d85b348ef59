/**
 * The chaos run's fault injector: it applies the plan's faults to the node processes at their
 * planned times, each restart with the node's next bucket profile from the plan, and records the
 * window each fault actually covered (from its start until the node serves again, or resumes).
 * A fault whose node is not up at its time (still restarting) is skipped and counted.
 */
import type { ChaosNodes } from './nodes.js';
import { describeFault, type Fault, type Plan } from './plan.js';
import { sleep } from './workload.js';

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
  readonly injected: Record<string, number> = {};
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly plan: Plan,
    private readonly nodes: ChaosNodes,
    private readonly log: (line: string) => void,
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
    if (fault.kind === 'pause') {
      this.nodes.pause(n);
      await sleep(fault.pauseMs);
      this.nodes.resume(n);
      w.to = Date.now();
      return;
    }
    if (fault.kind === 'kill') await this.nodes.kill(n);
    else await this.nodes.stop(n);
    await sleep(fault.downMs);
    const profile = this.plan.profile(n, this.nodes.runs(n));
    try {
      await this.nodes.start(n, profile, fault.kind === 'kill' && fault.freshDir);
    } catch (e) {
      w.note = `restart failed: ${(e as Error).message.split('\n')[0]}`;
      this.log(`n${n} ${w.note}`);
      return;
    }
    w.to = Date.now();
    this.log(`n${n} serving again as ${this.nodes.nodeId(n)} (bucket ${profile.name}) after ${w.to - w.from} ms`);
  }
}
