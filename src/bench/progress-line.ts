/**
 * A bench's progress on stderr: on a terminal one line rewritten in place (done / total, rate,
 * ETA), elsewhere (CI, a pipe) a plain line every `plainEveryMs`. `end()` finishes the line.
 *
 *   drain deliveryConcurrencyMax=32: 1520/2000 delivered  310/s  ETA 2 s
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

  /** `done` of `total` so far at `ratePerSec` (NaN: not known yet); `label` names the run. */
  update(label: string, done: number, total: number, unit: string, ratePerSec: number, nowMs = performance.now()): void {
    if (nowMs - this.lastMs < (this.out.isTTY ? 250 : this.plainEveryMs)) return;
    this.lastMs = nowMs;
    const rate = Number.isFinite(ratePerSec) ? `  ${Math.round(ratePerSec)}/s` : '';
    const eta = ratePerSec > 0 && done < total ? `  ETA ${Math.ceil((total - done) / ratePerSec)} s` : '';
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
