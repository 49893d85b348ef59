/**
 * bench/drain's command line: the options, their defaults (`--quick` or the full plan), the checks
 * made before any node starts, and the plan of configurations they give.
 */
import { benchArgs, numbers, quick, setPairs, words } from '../../lib.js';
import { MODES, type Mode } from './scenario.js';

export const USAGE = `usage: npm run bench -- drain [--quick] [--k 1000,10000] [--m 1,2] [--store fs,latency,slowdown,s3,sqlite]
         [--latency-ms 20] [--mode adr,adaptive,tuned] [--threads 2] [--set name=value …] [--no-peer]
         [--out drain] [--append] [--reprice] [--help]

  --k, --m      backlog sizes K and live node counts M (comma-separated)
  --store       fs: a folder bucket; latency: the folder bucket with every request delayed by
                --latency-ms on the clock, no CPU while it waits (src/store/testing/latency.ts, an
                S3-like round trip without S3's CPU); sqlite: the SQLite bucket
                (src/store/sqlite/store.ts) in a folder under TMPDIR; s3: KEEPWORK_TEST_S3_URL;
                slowdown: the folder bucket refusing 30 % of writes as S3's 503 SlowDown, the
                whole run (src/store/testing/faults.ts; throttle answers per delivery printed)
  --mode        adr (the design's defaults), adaptive, tuned (bench/support/drain/scenario.ts)
  --threads     each node's workerThreads (2 unless given)
  --set         any other tunable, for every node
  --no-peer     without the BullMQ peer (K due delayed jobs, M worker processes)
  --out         result files bench/results/<out>.json, .md (default drain)
  --append      keep the rows already in bench/results/<out>.json and add this run's
  --reprice     price the rows of bench/results/<out>.json again with store rates measured now (no drain)

  quick: K 1,000, M 2, fs, ADR defaults and tuned (~2 minutes). full: K 1k/10k/100k, M 1/2/3,
  fs (and s3 up to 10k), ADR defaults up to 10k (100k would take over an hour at 25/s).`;

const STORE_KINDS = ['fs', 'latency', 'slowdown', 's3', 'sqlite'];

export interface DrainOptions {
  ks: number[];
  ms: number[];
  stores: string[];
  /** Delay of every request of `--store latency`, ms. */
  latencyMs: number;
  modes: Mode[];
  /** Whether the BullMQ peer runs first. */
  peer: boolean;
  /** K was given: no configuration of the plan is left out for taking too long. */
  explicitK: boolean;
  /** Result files: bench/results/<out>.json and .md. */
  out: string;
  reprice: boolean;
  append: boolean;
  /** Worker threads per node, no idle release during a run, and the `--set` tunables: for every node of every mode. */
  nodeSet: Record<string, number>;
  s3Url: string | undefined;
}

/** The options of this process's command line; prints the usage and exits on `--help`. Throws naming a bad value. */
export function drainOptions(): DrainOptions {
  const args = benchArgs({
    k: { type: 'string' },
    m: { type: 'string' },
    store: { type: 'string' },
    'latency-ms': { type: 'string', default: '20' },
    mode: { type: 'string' },
    'no-peer': { type: 'boolean' },
    out: { type: 'string' },
    reprice: { type: 'boolean' },
    append: { type: 'boolean' },
    threads: { type: 'string', default: '2' },
    set: { type: 'string', multiple: true },
    help: { type: 'boolean', short: 'h' },
  });
  if (args.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const nodeSet = { workerThreads: Number(args.threads), idleTimeoutMs: 600_000, ...setPairs(args.set) };
  const s3Url = process.env.KEEPWORK_TEST_S3_URL;
  const stores = words(args.store) ?? (quick || !s3Url ? ['fs'] : ['fs', 's3']);
  for (const s of stores) if (!STORE_KINDS.includes(s)) throw new Error(`--store ${s}: not one of ${STORE_KINDS.join(', ')}`);
  const latencyMs = Number(args['latency-ms']);
  if (!Number.isFinite(latencyMs) || latencyMs < 0) throw new Error(`--latency-ms ${args['latency-ms']}: a number ≥ 0`);
  const modes = (words(args.mode) ?? (quick ? ['adr', 'tuned'] : ['adr', 'adaptive', 'tuned'])) as Mode[];
  for (const m of modes) if (!(m in MODES)) throw new Error(`--mode ${m}: not one of ${Object.keys(MODES).join(', ')}`);
  return {
    ks: numbers(args.k) ?? (quick ? [1000] : [1000, 10000, 100000]),
    ms: numbers(args.m) ?? (quick ? [2] : [1, 2, 3]),
    stores,
    latencyMs,
    modes,
    peer: !args['no-peer'],
    explicitK: args.k !== undefined,
    out: args.out ?? 'drain',
    reprice: args.reprice === true,
    append: args.append === true,
    nodeSet,
    s3Url,
  };
}

/** Every configuration to run, as [store, mode, K, M]; the full plan leaves out ADR defaults and S3 above 10k. */
export function plan(o: DrainOptions): [string, Mode, number, number][] {
  const out: [string, Mode, number, number][] = [];
  for (const k of o.ks)
    for (const store of o.stores)
      for (const mode of o.modes)
        for (const m of o.ms) {
          if (!o.explicitK && !quick && ((mode === 'adr' && k > 10_000) || (store === 's3' && k > 10_000))) continue;
          out.push([store, mode, k, m]);
        }
  return out;
}
