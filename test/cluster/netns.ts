/**
 * A small network lab for the partition tests: one bridge in the root namespace, one network
 * namespace per host joined to it by a veth pair (scripts/netns-lab.sh does the `ip` work), and
 * faults as nftables drop rules inside a host's namespace.
 *
 *   root namespace (the test, its clients)  <lab>br  <net>.1
 *        ├── veth ── <lab>-s3  <net>.10   (RGW)
 *        ├── veth ── <lab>-n1  <net>.11   (a node)
 *        └── …
 *
 *   lab.cut(host, peers, 'in' | 'out' | 'both')   drop what host receives from / sends to the peers
 *   lab.loss(host, peers, percent)                drop that share of packets both ways, at random
 *   lab.heal(host?)                               every rule of one host (or all) removed
 *   lab.rootAlias()                               a second address of the root namespace on the
 *                                                 bridge (<net>.2): a service there is cut apart
 *                                                 from the root's own <net>.1
 *   lab.down()                                    every process in the namespaces killed, the
 *                                                 namespaces, veths and bridge deleted
 *
 * `Lab.up` also starts a detached `netns-lab.sh watch` that tears the lab down if this process
 * dies without doing so (SIGKILL by a runner's timeout), and removes `cleanupDir` then too.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from '../../support/repo.js';

const SCRIPT = join(REPO, 'scripts/netns-lab.sh');

export interface Host {
  name: string;
  /** The namespace's name. */
  ns: string;
  ip: string;
  /** The command prefix that runs a program inside the namespace. */
  launcher: string[];
}

export type Direction = 'in' | 'out' | 'both';

function run(cmd: string, args: readonly string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}${r.error ?? ''}`);
  return r.stdout;
}

/** Why network namespaces cannot be used here, or undefined when they can. */
export function labUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  const r = spawnSync('bash', [SCRIPT, 'check'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? undefined : (r.stderr || r.stdout || String(r.error)).trim() || `netns-lab.sh check exited ${r.status}`;
}

export class Lab {
  private readonly hosts = new Map<string, Host>();
  private isDown = false;

  private constructor(
    readonly name: string,
    readonly net: string,
    names: readonly string[],
  ) {
    names.forEach((h, i) => {
      const ns = `${name}-${h}`;
      this.hosts.set(h, { name: h, ns, ip: `${net}.${10 + i}`, launcher: ['ip', 'netns', 'exec', ns] });
    });
  }

  /** The bridge's address: where the root namespace (the test) is seen from the hosts. */
  get rootIp(): string {
    return `${this.net}.1`;
  }

  /** Adds <net>.2 to the bridge (once) and returns it: the root namespace reached at a second address. */
  rootAlias(): string {
    const ip = `${this.net}.2`;
    if (!run('ip', ['-o', 'addr', 'show', 'dev', `${this.name}br`]).includes(` ${ip}/`))
      run('ip', ['addr', 'add', `${ip}/24`, 'dev', `${this.name}br`]);
    return ip;
  }

  /** Builds the lab; the name and the /24 are picked so that two runs side by side do not meet. */
  static up(hostNames: readonly string[], cleanupDir?: string): Lab {
    const taken = run('ip', ['-o', 'addr', 'show']);
    const links = run('ip', ['-o', 'link', 'show']);
    for (let attempt = 0; ; attempt++) {
      const id = (process.pid * 31 + attempt * 7919 + Math.floor(Math.random() * 1e6)) % 60_000;
      const name = `kwp${id.toString(36)}`;
      const net = `10.${200 + (id % 50)}.${Math.floor(id / 50) % 250}`;
      if (taken.includes(` ${net}.`) || links.includes(`: ${name}`)) {
        if (attempt > 20) throw new Error('no free lab name / subnet found');
        continue;
      }
      const lab = new Lab(name, net, hostNames);
      const watcher = spawn('bash', [SCRIPT, 'watch', String(process.pid), name, ...(cleanupDir ? [cleanupDir] : [])], {
        detached: true,
        stdio: 'ignore',
        env: { ...process.env },
      });
      watcher.unref();
      try {
        run('bash', [SCRIPT, 'up', name, net, ...hostNames]);
      } catch (e) {
        lab.down();
        throw e;
      }
      process.once('exit', () => lab.down());
      return lab;
    }
  }

  host(name: string): Host {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name} in lab ${this.name}`);
    return h;
  }

  /** Drops packets `host` receives from (`in`), sends to (`out`), or both, for each peer address. */
  cut(host: string, peers: readonly string[], direction: Direction): void {
    const set = `{ ${peers.join(', ')} }`;
    const rules: string[] = [];
    if (direction !== 'out') rules.push(`add rule inet kwlab input ip saddr ${set} drop`);
    if (direction !== 'in') rules.push(`add rule inet kwlab output ip daddr ${set} drop`);
    this.nft(host, rules);
  }

  /** Drops `percent` % of the packets between `host` and each peer, both ways, at random. */
  loss(host: string, peers: readonly string[], percent: number): void {
    const set = `{ ${peers.join(', ')} }`;
    this.nft(host, [
      `add rule inet kwlab input ip saddr ${set} numgen random mod 100 < ${percent} drop`,
      `add rule inet kwlab output ip daddr ${set} numgen random mod 100 < ${percent} drop`,
    ]);
  }

  /** Removes every rule of `host` (of every host when none is named). */
  heal(host?: string): void {
    for (const h of host ? [host] : [...this.hosts.keys()]) this.nft(h, ['flush chain inet kwlab input', 'flush chain inet kwlab output']);
  }

  /** The rules in force on `host` (for diagnostics). */
  rules(host: string): string {
    return run('ip', ['netns', 'exec', this.host(host).ns, 'nft', 'list', 'table', 'inet', 'kwlab']);
  }

  /** Kills every process in the lab's namespaces and deletes everything the lab made. Idempotent. */
  down(): void {
    if (this.isDown) return;
    this.isDown = true;
    spawnSync('bash', [SCRIPT, 'down', this.name], { stdio: 'ignore', timeout: 60_000 });
  }

  /** Whether anything of this lab is still there (namespaces or links). */
  leftovers(): string[] {
    const out: string[] = [];
    for (const line of run('ip', ['netns', 'list']).split('\n'))
      if (line.startsWith(`${this.name}-`)) out.push(`netns ${line.split(' ')[0]}`);
    for (const line of run('ip', ['-o', 'link', 'show']).split('\n')) {
      const m = /^\d+: ([^:@]+)/.exec(line);
      if (m && m[1]!.startsWith(this.name)) out.push(`link ${m[1]}`);
    }
    return out;
  }

  private nft(host: string, commands: readonly string[]): void {
    run('ip', ['netns', 'exec', this.host(host).ns, 'nft', '-f', '-'], commands.join('\n') + '\n');
  }
}
