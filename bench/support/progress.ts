/**
 * A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs and CI output
 * stay clean); elsewhere `done()` prints one summary line.
 *
 *   [██████████░░░░░░░░░░] 512/1000  51%  12.3 s  drained 41/s
 */
export interface Progress {
  update(done: number, note?: string): void;
  done(note?: string): void;
}

const WIDTH = 24;

export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const t0 = performance.now();
  const tty = stream.isTTY === true;
  let last = 0;
  let shown = 0;
  const line = (n: number, note = '') => {
    const frac = total > 0 ? Math.min(1, n / total) : 1;
    const fill = Math.round(frac * WIDTH);
    const s = ((performance.now() - t0) / 1000).toFixed(1);
    return `${label} [${'█'.repeat(fill)}${'░'.repeat(WIDTH - fill)}] ${n}/${total} ${Math.floor(frac * 100)}% ${s} s ${note}`;
  };
  return {
    update(n, note) {
      shown = n;
      if (!tty) return;
      const now = performance.now();
      if (now - last < 100 && n < total) return;
      last = now;
      stream.write(`\r\x1b[2K${line(n, note)}`);
    },
    done(note) {
      if (tty) stream.write(`\r\x1b[2K`);
      stream.write(line(shown, note) + '\n');
    },
  };
}
