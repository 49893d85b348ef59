/**
 * A bench's progress on stderr: on a terminal one line rewritten in place (done / total, rate,
 * ETA), elsewhere (CI, a pipe) a plain line every `plainEveryMs`. `end()` finishes the line.
 *
 *   deliveryConcurrencyMax=32: draining: 1520/2000 delivered  310 delivered/s  ETA 2 s
 */
export interface ProgressOut {
  isTTY?: boolean;
  write(text: string): unknown;
}

export class ProgressLine {
  private lastMs = -Infinity;
  private shown = false;

  constructor(
    private readonly out: ProgressOut = process.stderr,
    private readonly plainEveryMs = 5_000,
  ) {}

  /**
   * `done` of `total` `unit` so far at `ratePerSec` (NaN: not known yet); `label` names the run.
   * The ETA is what is left at that rate, unless `o.etaS` gives it; `o.rateUnit` names the rate's
   * unit when it is not `unit` per second.
   */
  update(
    label: string,
    done: number,
    total: number,
    unit: string,
    ratePerSec: number,
    o: { etaS?: number; rateUnit?: string; nowMs?: number } = {},
  ): void {
    const nowMs = o.nowMs ?? performance.now();
    if (nowMs - this.lastMs < (this.out.isTTY ? 250 : this.plainEveryMs)) return;
    this.lastMs = nowMs;
    const rate = Number.isFinite(ratePerSec) ? `  ${Math.round(ratePerSec)} ${o.rateUnit ?? `${unit}/s`}` : '';
    const etaS = o.etaS ?? (ratePerSec > 0 && done < total ? (total - done) / ratePerSec : undefined);
    const eta = etaS !== undefined && etaS > 0 ? `  ETA ${Math.ceil(etaS)} s` : '';
    const text = `${label}: ${done}/${total} ${unit}${rate}${eta}`;
    this.shown = true;
    this.out.write(this.out.isTTY ? `\r\x1b[K${text}` : `${text}\n`);
  }

  /** A line of its own (ends a live line first). */
  note(text: string): void {
    this.end();
    this.out.write(`${text}\n`);
  }

  end(): void {
    if (this.shown && this.out.isTTY) this.out.write('\n');
    this.shown = false;
    this.lastMs = -Infinity;
  }
}
