/**
 * Real node processes on loopback with a token file and a cluster secret (docs/security.md):
 *
 *   forward   a call through a node that does not hold the actor reaches the holder, signed with
 *             the secret and carrying the caller's token name; one counter whichever node is asked
 *   refused   a node with another secret cannot get an answer from the holder: the holder refuses
 *             its forward (401, unsigned) and the node answers OWNER_UNREACHABLE, never the reply
 *   rights    a cross-tenant token is 403 through any node; no token is 401
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { call, mustCall } from '../../support/cluster/calls.js';
import { withCluster } from '../../support/cluster/cluster.js';
import { sha256Hex } from '../../src/core/tokens.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

const APP_TOKEN = 'kw_cluster-test-app-token';
const SECRET = 'the-secret-these-nodes-share-0123456789abcdef';

describe('cluster with tokens and a cluster secret', () => {
  it('forwards signed calls with the caller, and refuses a node without the secret', { timeout: 90_000 }, (t) =>
    withCluster(t, 'auth', async (c) => {
      const tokens = join(c.root, 'tokens.json');
      writeFileSync(
        tokens,
        JSON.stringify({ version: 1, tokens: [{ name: 'app', sha256: sha256Hex(APP_TOKEN), tenants: ['acme'], rights: ['call'] }] }),
        { mode: 0o600 },
      );
      const secret = join(c.root, 'secret');
      const wrong = join(c.root, 'wrong-secret');
      writeFileSync(secret, `${SECRET}\n`, { mode: 0o600 });
      writeFileSync(wrong, 'not-the-secret-these-nodes-share-0123456789\n', { mode: 0o600 });
      const args = (secretFile: string) => ({
        args: ['--auth-file', tokens, '--cluster-secret-file', secretFile],
        set: { leasePeriodMs: 6_000 },
      });
      const [n1, n2] = await c.startAll(['n1', 'n2'], args(secret));
      const n3 = await c.start('n3', args(wrong));
      const actor = 'acme/Probe/counter';
      const token = APP_TOKEN;

      assert.equal(await mustCall(n1!.url, actor, 'slowIncrement', [], { durable: true, token }), 1, 'n1 takes the actor');
      assert.equal(await mustCall(n2!.url, actor, 'slowIncrement', [], { durable: true, token }), 2, 'n2 forwards to n1');
      assert.equal(await mustCall(n2!.url, actor, 'value', [], { token }), 2);

      const viaStranger = await call(n3.url, actor, 'value', [], { token });
      assert.equal(viaStranger.status, 503, JSON.stringify(viaStranger));
      assert.equal(viaStranger.error, 'OWNER_UNREACHABLE');
      assert.match(viaStranger.message ?? '', /cluster's signature/);

      const cross = await call(n2!.url, 'other/Probe/x', 'value', [], { token });
      assert.equal(cross.status, 403);
      assert.equal(cross.error, 'FORBIDDEN');
      assert.equal((await call(n2!.url, actor, 'value')).status, 401);
      assert.equal(await mustCall(n1!.url, actor, 'value', [], { token }), 2, 'nothing ran for the refused calls');
    }),
  );
});
