import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { importRule, layerOf, lintLayersSource, onDemandRule } from '../../scripts/lint-layers.js';

describe('layer lint', () => {
  it('places files in their layer', () => {
    assert.equal(layerOf('alarms/keys.ts'), 'alarms');
    assert.equal(layerOf('index.ts'), '.');
  });

  it('allows imports down the order and within a layer', () => {
    for (const [from, to] of [
      ['store/s3/store.ts', 'core/config.ts'],
      ['alarms/keys.ts', 'leases/records.ts'],
      ['workers/pipeline.ts', 'workers/deps.ts'],
      ['main/node.ts', 'alarms/sweep.ts'],
      ['cli/cli.ts', 'ops/index-check.ts'],
      ['index.ts', 'http/start.ts'],
    ]) {
      assert.equal(importRule(from!, to!), undefined, `${from} → ${to}`);
    }
  });

  it('refuses upward, sideways and undeclared imports', () => {
    assert.match(importRule('store/s3/store.ts', 'main/config.ts')!, /store imports main, a layer above it/);
    assert.match(importRule('replication/replica.ts', 'workers/actor-db.ts')!, /a layer above it/);
    assert.match(importRule('leases/holds.ts', 'replication/chain.ts')!, /a layer beside it/);
    assert.match(importRule('http/server.ts', 'ops/index-stats.ts')!, /a layer beside it/);
    assert.match(importRule('main/node.ts', 'http/server.ts')!, /main imports http, a layer above it/);
    assert.match(importRule('misc/x.ts', 'core/clock.ts')!, /src\/misc\/ is not a declared layer/);
  });

  it('reads static, re-export, type-only and dynamic imports, and reports the line', () => {
    const code = [
      "import { a } from '../core/clock.js';",
      "import type { B } from '../main/node.js';",
      "export { c } from '../http/server.js';",
      "const d = await import('../cli/cli.js');",
      "import { e } from 'node:fs';",
    ].join('\n');
    const v = lintLayersSource('src/store/x.ts', code);
    assert.deepEqual(
      v.map((x) => x.line),
      [2, 3, 4],
    );
  });

  it('lets src/ load the AWS SDK with import() or for types only', () => {
    assert.equal(onDemandRule('@aws-sdk/client-s3', false), undefined);
    assert.equal(onDemandRule('p-queue', true), undefined);
    assert.match(onDemandRule('@aws-sdk/client-s3', true)!, /loaded on demand: use `await import\('@aws-sdk\/client-s3'\)`/);
    const code = [
      "import { S3Client } from '@aws-sdk/client-s3';", // loads the SDK with the module: refused
      "import type { PutObjectCommandInput } from '@aws-sdk/client-s3';",
      "import { type GetObjectCommandInput } from '@aws-sdk/client-s3';",
      "import { NodeHttpHandler } from '@smithy/node-http-handler';", // refused
      "export { S3Client } from '@aws-sdk/client-s3';", // refused
      "export type { S3Client as C } from '@aws-sdk/client-s3';",
      "const sdk = await import('@aws-sdk/client-s3');",
      "import PQueue from 'p-queue';",
    ].join('\n');
    assert.deepEqual(
      lintLayersSource('src/store/s3/sdk-client.ts', code).map((x) => x.line),
      [1, 4, 5],
    );
  });

  it('fails the command on an upward import planted in src/store, and passes once it is gone', () => {
    const root = mkdtempSync(join(tmpdir(), 'kw-layers-'));
    try {
      mkdirSync(join(root, 'src/store'), { recursive: true });
      mkdirSync(join(root, 'src/main'), { recursive: true });
      writeFileSync(join(root, 'src/main/node.ts'), "import { x } from '../store/bad.js';\nexport const y = x;\n");
      writeFileSync(join(root, 'src/store/bad.ts'), "import { y } from '../main/node.js';\nexport const x = 1;\n");
      const run = () => spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint-layers.ts', '--root', root], { encoding: 'utf8' });
      const bad = run();
      assert.equal(bad.status, 1, bad.stdout + bad.stderr);
      assert.match(bad.stderr, /src\/store\/bad\.ts:1:1 store imports main, a layer above it/);
      assert.doesNotMatch(bad.stderr, /src\/main\/node\.ts/);
      writeFileSync(join(root, 'src/store/bad.ts'), 'export const x = 1;\n');
      const good = run();
      assert.equal(good.status, 0, good.stdout + good.stderr);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
