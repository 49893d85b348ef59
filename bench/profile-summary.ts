/**
 * bench/profile-summary: self time per function (and per file) of V8 .cpuprofile files, the
 * heaviest first — enough to see where a thread's time goes without a browser.
 *
 *   tsx bench/profile-summary.ts /tmp/prof/*.cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
const files = args.filter((a, i) => !a.startsWith('--') && i !== topAt + 1);

const short = (url: string) => url.replace(/^file:\/\/.*?\/(node_modules|src|bench|test)\//, '$1/').replace(/^node:/, 'node:');

for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const n = byId.get(id)!;
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
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
}
