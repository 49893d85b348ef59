#!/usr/bin/env node
/**
 * The `keepwork` command (commander). `start` runs a node until SIGINT/SIGTERM, then hands over
 * cleanly (node.stop()).
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { Command, InvalidArgumentError } from 'commander';
import { deferredLogger } from '../core/logger.js';
import { isKeepworkError } from '../core/errors.js';
import { defaultBucketUrl } from '../store/open.js';
import { startNode } from '../http/start.js';
import { readClusterSecret } from '../core/cluster-signature.js';
import type { TlsOptions } from '../core/tls-material.js';
import { parseTunable, tunablesHelp } from './tunables-help.js';
import type { BenchFlags } from './bench-command.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number from 0 to 65535');
  return n;
}

/** Percent, 0–400 (0: V8's own heap growing). */
function percent(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 400) throw new InvalidArgumentError('must be an integer from 0 to 400');
  return n;
}

/**
 * How far V8 lets the old generation grow past what survived its last full GC before the next
 * one (1 + percent/100). V8's own factor, up to 4 on a busy process, lets the main thread's heap
 * of a node draining a backlog sit at several times its live data (docs/tuning.md, "Memory"). The
 * flag is read each time V8 sizes the heap after a GC, so setting it at start takes effect; it
 * is the process's, so it applies to the worker threads too.
 */
function setHeapGrowing(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}

// No commander default for the repeatable options below: help would print `(default: {})`.
function classPair(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0 || eq === value.length - 1) throw new InvalidArgumentError('expected Name=path/to/module.js');
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

/** `--set name=value`: a switch's bad value throws BadConfig (before anything starts); other text is refused here. */
function tunable(value: string, previous: Record<string, number | boolean> = {}): Record<string, number | boolean> {
  const parsed = parseTunable(value);
  if (!parsed) throw new InvalidArgumentError('expected name=integer, e.g. leasePeriodMs=2000, or name=true|false for a switch');
  return { ...previous, [parsed[0]]: parsed[1] };
}

function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

// `keepwork index check | head`: a closed pipe ends the command quietly, as for any Unix tool.
process.stdout.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' ? process.exit(process.exitCode ?? 0) : undefined));

/** The package's version: package.json sits two folders up from both src/cli/ and dist/cli/. */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const program = new Command('keepwork')
  .description('a durable-actor runtime for Node.js')
  .version(VERSION, '-V, --version', 'print the version')
  .showHelpAfterError();

/** `--bucket` when given, else the data dir's own bucket, defaultBucketUrl (a hook, so every action sees `o.bucket` set). */
function bucketOfData(command: Command): void {
  const o = command.opts<{ bucket?: string; data: string }>();
  if (o.bucket === undefined) command.setOptionValue('bucket', defaultBucketUrl(o.data));
}

program
  .command('start')
  .description('run a node (the embedded default: ./data with its bucket in it, the SQLite file bucket.db)')
  .option('--data <dir>', 'data directory', './data')
  .option(
    '--bucket <url>',
    'bucket URL: file://…, a path, s3://bucket/prefix?endpoint=…, or sqlite:FILE (one host) (default: sqlite:<data>/bucket.db, or the folder <data>/bucket if it exists)',
  )
  .option('--port <n>', 'HTTP port (0 picks a free one)', port, 8080)
  .option('--host <addr>', 'HTTP listen address', '127.0.0.1')
  .option('--class <Name=path>', 'an actor class module (repeatable; each is loaded and checked at start)', classPair)
  .option('--tenants <a,b>', 'tenants to serve (default: all)', list)
  .option('--node-id <id>', 'this node’s id (default: kept in the data dir)')
  .option(
    '--set <name=value>',
    'a tunable, e.g. leasePeriodMs=2000 or sweepAdaptive=false (repeatable; every tunable is listed below)',
    tunable,
  )
  .option('--advertise <url>', 'the URL other nodes call this one at, if not the listen address (required with --host 0.0.0.0)')
  .option('--peers-allow <cidrs>', 'forward calls only to holders inside these networks, e.g. 10.0.0.0/8,fd00::/8', list)
  .option('--auth-file <path>', 'bearer tokens and their rights (keepwork token add; docs/security.md)')
  .option('--cluster-secret-file <path>', 'the secret every node of the cluster shares: signs forwarded calls and their replies')
  .option('--insecure-no-auth', 'serve a non-loopback --host without tokens or cluster secret (a warning at every start)')
  .option('--tls-cert <path>', 'serve HTTPS with this PEM certificate (chain); --advertise must then be https')
  .option('--tls-key <path>', 'the PEM private key of --tls-cert')
  .option(
    '--tls-ca <path>',
    'PEM CA bundle https peers (and, with --tls-require-client-cert, clients) must chain to (default: the system store)',
  )
  .option('--tls-client-cert <path>', 'the certificate forwards present to a peer that asks for one (default: --tls-cert)')
  .option('--tls-client-key <path>', 'the PEM private key of --tls-client-cert (default: --tls-key)')
  .option('--tls-require-client-cert', 'ask every client, API clients too, for a certificate chaining to --tls-ca (mutual TLS)')
  .option(
    '--heap-growth <pct>',
    'V8 collects the old generation once it has grown this many percent past what the last full GC kept (0: V8 decides)',
    percent,
    20,
  )
  .addHelpText('after', tunablesHelp())
  .hook('preAction', (_program, command) => bucketOfData(command))
  .action(
    async (
      o: {
        data: string;
        bucket: string;
        port: number;
        host: string;
        advertise?: string;
        peersAllow?: string[];
        class?: Record<string, string>;
        tenants?: string[];
        nodeId?: string;
        set?: Record<string, number | boolean>;
        heapGrowth: number;
        authFile?: string;
        clusterSecretFile?: string;
        insecureNoAuth?: boolean;
      } & TlsFlags,
    ) => {
      setHeapGrowing(o.heapGrowth);
      // Listen before anything starts: a SIGTERM that comes while the node starts (or right after the
      // line that says it serves) stops it cleanly instead of killing the process outright.
      const stopSignal = new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
      const log = deferredLogger(); // pino loads at the first line written, once the workers are starting
      const secret = o.clusterSecretFile === undefined ? {} : { clusterSecret: readClusterSecret(o.clusterSecretFile) };
      const node = await startNode({
        ...o.set,
        dataDir: o.data,
        bucket: o.bucket,
        port: o.port,
        host: o.host,
        ...(o.advertise === undefined ? {} : { advertise: o.advertise }),
        ...(o.peersAllow === undefined ? {} : { peersAllow: o.peersAllow }),
        classes: o.class ?? {},
        tenants: o.tenants,
        nodeId: o.nodeId,
        logger: log,
        ...(o.authFile === undefined ? {} : { auth: o.authFile }),
        ...secret,
        ...(o.insecureNoAuth ? { insecureNoAuth: true } : {}),
        ...tlsOf(o),
      });
      console.error(`keepwork node ${node.nodeId} (epoch ${node.epoch}) serving ${node.url} — Ctrl-C stops it`);
      await stopSignal;
      await node.stop();
    },
  );

/** `startNode`'s `tls` from the `--tls-*` flags (none given: no `tls`). */
interface TlsFlags {
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  tlsRequireClientCert?: boolean;
}

function tlsOf(o: TlsFlags): { tls?: TlsOptions } {
  const tls: TlsOptions = {
    ...(o.tlsCert === undefined ? {} : { cert: o.tlsCert }),
    ...(o.tlsKey === undefined ? {} : { key: o.tlsKey }),
    ...(o.tlsCa === undefined ? {} : { ca: o.tlsCa }),
    ...(o.tlsClientCert === undefined ? {} : { clientCert: o.tlsClientCert }),
    ...(o.tlsClientKey === undefined ? {} : { clientKey: o.tlsClientKey }),
    ...(o.tlsRequireClientCert ? { requireClientCert: true } : {}),
  };
  return Object.keys(tls).length === 0 ? {} : { tls };
}

/** A subcommand that reads (or writes) a bucket: every one takes `--bucket URL` (default: the data dir's, defaultBucketUrl). */
function bucketCommand(parent: Command, name: string): Command {
  return parent
    .command(name)
    .option('--bucket <url>', 'bucket URL (default: sqlite:<data>/bucket.db, or the folder <data>/bucket if it exists)')
    .option('--data <dir>', 'the data directory whose bucket to use when --bucket is not given', './data')
    .hook('preAction', (_program, command) => bucketOfData(command));
}

bucketCommand(program, 'status')
  .description('nodes (live / expired / fenced / released), holds per node, and each tenant’s index size and lag, from the bucket alone')
  .option('--json', 'print JSON instead of a table: {"nodes": […], "index": […] (null with --no-index)}')
  .option('--index', 'list the alarm index (the default)')
  .option('--no-index', 'skip listing the alarm index (with --json: "index": null)')
  .action(async (o: { bucket: string; json?: boolean; index?: boolean }) => {
    const { statusCommand } = await import('./status-command.js');
    await statusCommand(o);
  });

const alarms = program.command('alarms').description('the alarm index in the bucket');
bucketCommand(alarms, 'ls')
  .description('list index entries, decoded, in due order')
  .option('--tenant <t>', 'one tenant (default: every tenant in the index)')
  .option('--due-before <iso-time>', 'only entries due at or before this time')
  .option('--limit <n>', 'at most this many rows', Number, 1000)
  .option('--json', 'one JSON object per line')
  .action(async (o: { bucket: string; tenant?: string; dueBefore?: string; limit?: number; json?: boolean }) => {
    const { alarmsLsCommand } = await import('./alarms-command.js');
    await alarmsLsCommand(o);
  });

const actor = program.command('actor').description('work on one actor in the bucket');
bucketCommand(actor, 'restore')
  .description('write a past state of an actor (as of a link, or a time) as its new head')
  .argument('<address>', 'tenant/class/name')
  .option('--seq <n>', 'restore the state as of this link', Number)
  .option('--at <iso-time>', 'restore the state as of the newest link written at or before this time')
  .action(async (address: string, o: { bucket: string; seq?: number; at?: string }) => {
    const { restoreCommand } = await import('./restore-command.js');
    await restoreCommand(address, o);
  });

bucketCommand(actor, 'inspect')
  .description('one actor as the bucket shows it: head, generation, holder, committed alarm, alarm_indexed, its index entries')
  .argument('<address>', 'tenant/class/name')
  .option('--json', 'print JSON')
  .action(async (address: string, o: { bucket: string; json?: boolean }) => {
    const { inspectCommand } = await import('./inspect-command.js');
    await inspectCommand(address, o);
  });

const index = program.command('index').description('the alarm index against the actors’ committed state');
bucketCommand(index, 'check')
  .description('every committed alarm’s named entry exists? and what every other entry is (exit 2 when an alarm is missing)')
  .option('--tenant <t>', 'one tenant (default: all)')
  .option('--repair', 'list a fresh entry for each committed alarm no entry lists (never deletes anything)')
  .option('--json', 'one JSON object per finding, then a summary')
  .action(async (o: { bucket: string; tenant?: string; repair?: boolean; json?: boolean }) => {
    const { indexCheckCommand } = await import('./index-check-command.js');
    await indexCheckCommand(o);
  });

const bucket = program.command('bucket').description('the bucket itself');
bucketCommand(bucket, 'migrate')
  .description('convert a folder bucket written by an older keepwork to the current on-disk format (every node stopped)')
  .action(async (o: { bucket: string }) => {
    const { bucketMigrateCommand } = await import('./bucket-migrate-command.js');
    bucketMigrateCommand(o);
  });

bucketCommand(bucket, 'copy')
  .description('copy every object into an empty bucket of any kind, e.g. a folder bucket into a SQLite file (every node stopped)')
  .requiredOption('--to <url>', 'the empty bucket to copy into (created if it is a folder or SQLite file that does not exist)')
  .action(async (o: { bucket: string; to: string }) => {
    const { bucketCopyCommand } = await import('./bucket-copy-command.js');
    await bucketCopyCommand(o);
  });

const token = program.command('token').description('bearer tokens in a token file (--auth-file of start; docs/security.md)');
const TOKEN_FILE = './keepwork-tokens.json';
token
  .command('add')
  .description('add a token: prints it once (stdout); the file keeps only its SHA-256')
  .argument('<name>', 'a name for the token’s holder (letters, digits, . _ -)')
  .requiredOption('--tenants <a,b>', 'tenants it may use (* for all)', list)
  .requiredOption('--rights <call,read,admin>', 'call: actor calls; read: status and metrics; admin: everything', list)
  .option('--file <path>', 'the token file (created, mode 0600)', TOKEN_FILE)
  .action(async (name: string, o: { file: string; tenants: string[]; rights: string[] }) => {
    const { tokenAddCommand } = await import('./token-command.js');
    tokenAddCommand(name, o);
  });
token
  .command('list')
  .description('names, tenants and rights (never the hashes)')
  .option('--file <path>', 'the token file', TOKEN_FILE)
  .option('--json', 'print JSON')
  .action(async (o: { file: string; json?: boolean }) => {
    const { tokenListCommand } = await import('./token-command.js');
    tokenListCommand(o);
  });
token
  .command('remove')
  .description('remove a token by name')
  .argument('<name>')
  .option('--file <path>', 'the token file', TOKEN_FILE)
  .action(async (name: string, o: { file: string }) => {
    const { tokenRemoveCommand } = await import('./token-command.js');
    tokenRemoveCommand(name, o);
  });

function positive(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

const bench = program
  .command('bench')
  .description('load benchmarks against your bucket, on nodes it starts here or on your running nodes (docs/bench.md)');

/** The flags every bench takes. */
function benchCommandOf(name: string, description: string): Command {
  return bench
    .command(name)
    .description(description)
    .requiredOption(
      '--bucket <url>',
      'the bucket: a folder, sqlite:FILE or s3://bucket/prefix?endpoint=… (its place must be empty; see --prefix)',
    )
    .option('--prefix <p>', 'run in this empty place inside the bucket (a sub-folder or a key prefix), not at its root')
    .option(
      '--targets <url,…>',
      'measure these running nodes (on --bucket, serving the bench class: see `bench class`) instead of starting nodes; token from KEEPWORK_TOKEN',
    )
    .option('--set <name=value>', 'a tunable of every node, as for start (repeatable)', tunable)
    .option('--sweep <name=v1,v2,…>', 'run once per value of one tunable and recommend one, e.g. deliveryConcurrencyMax=32,128')
    .option('--reps <n>', 'runs per value (alternating the order)', positive, 1)
    .option('--out <dir>', 'where to write the JSON and HTML reports', '.');
}

benchCommandOf('drain', 'start 1+N nodes, arm K alarms through one, kill it -9, and measure how the others drain them')
  .option('--alarms <k>', 'alarms to arm', positive, 2000)
  .option('--nodes <n>', 'live nodes that drain (one more is started and killed; default 2, none with --targets)', positive)
  .action(async (o: BenchFlags) => {
    const { benchCommand } = await import('./bench-command.js');
    await benchCommand('drain', o);
  });

bench
  .command('class')
  .description('print the --class flag that makes a node serve the bench class (for nodes given to --targets)')
  .action(async () => {
    const { BENCH_CLASS, BENCH_CLASS_MODULE } = await import('../bench/local-nodes.js');
    console.log(`${BENCH_CLASS}=${BENCH_CLASS_MODULE}`);
  });

benchCommandOf('calls', 'one node: calls per second and latency percentiles of a method call that writes')
  .option('--keys <n>', 'actors called, round robin (1: every call queues on one actor)', positive, 1)
  .option('--durable', 'durable calls (the answer waits until the write is in the bucket)')
  .option('--seconds <s>', 'how long to count, after a 1 s warm-up', positive, 10)
  .option('--concurrency <n>', 'calls in flight', positive, 32)
  .action(async (o: BenchFlags) => {
    const { benchCommand } = await import('./bench-command.js');
    await benchCommand('calls', o);
  });

program.parseAsync().catch((e: unknown) => {
  const code = isKeepworkError(e) ? `${e.code}: ` : '';
  console.error(`keepwork: ${code}${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
