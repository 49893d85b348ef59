/**
 * Progress of a long CLI operation, on stderr so stdout stays the result: on a terminal one line
 * rewritten in place (at most every `everyMs`), elsewhere a plain line at most every `quietMs`.
 * `done()` ends the line. Writes nothing for operations that finish within the first interval.
 */
export interface ProgressSink {
  isTTY?: boolean;
  write(text: string): unknown;
}

export class Progress {
  private lastMs: number;
  private shown = false;

  constructor(
    private readonly out: ProgressSink = process.stderr,
    private readonly now: () => number = () => performance.now(),
    private readonly everyMs = 250,
    private readonly quietMs = 5_000,
  ) {
    this.lastMs = now();
  }

  /** Reports `text` if enough time has passed since the last report. */
  update(text: string): void {
    const t = this.now();
    if (t - this.lastMs < (this.out.isTTY ? this.everyMs : this.quietMs)) return;
    this.lastMs = t;
    this.shown = true;
    this.out.write(this.out.isTTY ? `\r\x1b[K${text}` : `${text}\n`);
  }

  done(): void {
    if (this.shown && this.out.isTTY) this.out.write('\n');
    this.shown = false;
  }
}
