/**
 * bench/profile-summary: self time per function (and per file) of V8 .cpuprofile files, the
 * heaviest first — enough to see where a thread's time goes without a browser.
 *
 *   tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile [--top 25] [--skip-ms N]
 *
 * --skip-ms leaves out the first N ms of each profile (e.g. a bench's set-up phase).
 * --window FROM-TO keeps only the samples between two points of the monotonic clock, in µs (what
 * `process.hrtime.bigint() / 1000n` reads; the same clock in every thread's profile): bench/first-touch
 * prints the window of its touch.
 */
import { readFileSync } from 'node:fs';
import { benchCommand } from './lib.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals: files } = benchCommand({
  top: { type: 'string', default: '25' },
  'skip-ms': { type: 'string', default: '0' },
  window: { type: 'string' },
});
const [fromUs, toUs] = values.window ? values.window.split('-').map(Number) : [-Infinity, Infinity];
const top = Number(values.top);
const skipUs = Number(values['skip-ms']) * 1000;

const short = (url: string) => url.replace(/^file:\/\/.*?\/(node_modules|src|bench|test)\//, '$1/').replace(/^node:/, 'node:');

for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, number>();
  const byFile = new Map<string, number>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusiveUs = new Map<string, number>();
  let total = 0;
  let elapsed = 0;
  p.samples.forEach((id, i) => {
    const n = byId.get(id)!;
    const dt = p.timeDeltas[i] ?? 0;
    elapsed += dt;
    if (elapsed < skipUs) return;
    const at = p.startTime + elapsed;
    if (at < fromUs! || at > toUs!) return;
    total += dt;
    if (n.callFrame.functionName !== '(idle)') {
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const f = byId.get(at)!.callFrame;
        if (!f.url.includes('/src/')) continue;
        const key = `${f.functionName || '(anon)'} ${short(f.url)}:${f.lineNumber + 1}`;
        if (!seen.has(key)) inclusiveUs.set(key, (inclusiveUs.get(key) ?? 0) + dt);
        seen.add(key);
      }
    }
    const f = n.callFrame;
    const key = `${f.functionName || '(anon)'} ${short(f.url)}:${f.lineNumber + 1}`;
    selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
    const fk = f.url ? short(f.url) : f.functionName;
    byFile.set(fk, (byFile.get(fk) ?? 0) + dt);
  });
  const idle = (selfUs.get('(idle) :0') ?? 0) / 1000;
  console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms sampled, ${idle.toFixed(0)} ms idle`);
  const show = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .forEach(([k, us]) =>
        console.log(`  ${(us / 1000).toFixed(0).padStart(7)} ms  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`),
      );
  console.log(' by file:');
  show(byFile, 12);
  console.log(' by function:');
  show(selfUs, top);
  console.log(' keepwork functions, inclusive (self + callees):');
  show(inclusiveUs, top);
}
