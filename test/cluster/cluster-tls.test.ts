/**
 * docs/security.md's "Three hosts with TLS and tokens", on one machine: its first block (the CA,
 * three node certificates, the cluster secret, a token) runs as written with 10.0.0.N changed to
 * 127.0.0.N; then three node processes start with the recipe's flags, each bound to its own
 * loopback address on a free port and advertising that (the recipe's 0.0.0.0 and fixed port
 * would put all three on one address), sharing one folder bucket.
 *
 *   forward   a call through node 1 to the actor node 2 holds is forwarded over TLS, signed, with
 *             the caller's token; node 3 reaches it too
 *   refused   a wrong token is 401; plain HTTP to a TLS port and a client without the CA get no answer
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { call, mustCall } from '../../support/cluster/calls.js';
import { withCluster } from '../../support/cluster/cluster.js';
import { REPO } from '../../support/repo.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

const HEADING = '## Three hosts with TLS and tokens';

/** The recipe's first shell block, its hosts moved to loopback. */
function recipeSetup(): string {
  const doc = readFileSync(join(REPO, 'docs/security.md'), 'utf8');
  const section = doc.slice(doc.indexOf(HEADING));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(doc.includes(HEADING) && block, `docs/security.md has a "${HEADING}" section with a sh block`);
  return block[1]!.replaceAll('10.0.0.', '127.0.0.');
}

/** Runs the setup in `dir` with `keepwork` being this repository's CLI; returns the token it printed. */
function runSetup(dir: string): string {
  const tsx = import.meta.resolve('tsx'); // run from the recipe's folder, where a bare `tsx` does not resolve
  const keepwork = `keepwork() { "${process.execPath}" --import "${tsx}" "${join(REPO, 'src/cli/cli.ts')}" "$@"; }\n`;
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', keepwork + recipeSetup()], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `the recipe's setup failed (${r.status ?? r.signal}):\n${r.stderr}`);
  const token = /kw_[A-Za-z0-9_-]+/.exec(r.stdout)?.[0];
  assert.ok(token, `the setup printed a token:\n${r.stdout}`);
  return token;
}

describe('three nodes with TLS and tokens, as docs/security.md sets them up', () => {
  it('forwards over TLS with the token; refuses a wrong token, plain HTTP and an unknown CA', { timeout: 120_000 }, (t) =>
    withCluster(t, 'tls', async (c) => {
      const token = runSetup(c.root);
      const file = (name: string) => join(c.root, name);
      const flags = (n: number) => [
        ...['--tls-cert', file(`node-${n}.pem`), '--tls-key', file(`node-${n}.key`), '--tls-ca', file('ca.pem')],
        ...['--auth-file', file('tokens.json'), '--cluster-secret-file', file('cluster-secret'), '--peers-allow', '127.0.0.0/24'],
      ];
      const [n1, n2, n3] = await Promise.all(
        [1, 2, 3].map((n) => c.start(`n${n}`, { host: `127.0.0.${n}`, args: flags(n), set: { leasePeriodMs: 6_000 } })),
      );
      for (const [i, n] of [n1!, n2!, n3!].entries()) assert.match(n.url, new RegExp(`^https://127\\.0\\.0\\.${i + 1}:\\d+$`));
      const tls = { ca: readFileSync(file('ca.pem')) };
      const actor = 'billing/Probe/inv-17';

      assert.equal(await mustCall(n2!.url, actor, 'slowIncrement', [], { durable: true, token, tls }), 1, 'n2 takes the actor');
      assert.equal(await mustCall(n1!.url, actor, 'slowIncrement', [], { durable: true, token, tls }), 2, 'n1 forwards to n2');
      assert.equal(await mustCall(n3!.url, actor, 'value', [], { token, tls }), 2, 'n3 forwards to n2');

      const wrong = await call(n1!.url, actor, 'value', [], { token: 'kw_not-a-token-of-this-cluster', tls });
      assert.equal(wrong.status, 401, JSON.stringify(wrong));
      assert.equal(wrong.error, 'UNAUTHENTICATED');
      const plain = await call(n1!.url.replace('https:', 'http:'), actor, 'value', [], { token });
      assert.equal(plain.status, 0, JSON.stringify(plain));
      const untrusting = await call(n1!.url, actor, 'value', [], { token, tls: {} });
      assert.equal(untrusting.status, 0, JSON.stringify(untrusting));
      assert.equal(await mustCall(n2!.url, actor, 'value', [], { token, tls }), 2, 'nothing ran for the refused calls');
    }),
  );
});
