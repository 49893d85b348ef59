/**
 * keepwork/client loads nothing native and nothing heavy: every module its entry reaches, static
 * or dynamic imports and type imports alike, is a module of src/ that imports no package and no
 * node: built-in (so no better-sqlite3, piscina, pino or AWS SDK; only the fetch the runtime has).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { REPO } from '../../support/repo.js';

/** Every source file reachable from `entry` by relative imports, and every other specifier met. */
function importGraph(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [entry];
  while (todo.length) {
    const file = todo.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      if (fileName.startsWith('.')) todo.push(resolve(dirname(file), fileName).replace(/\.js$/, '.ts'));
      else packages.add(`${fileName} (in ${relative(REPO, file)})`);
    }
  }
  return { files: [...files].map((f) => relative(REPO, f)).sort(), packages: [...packages] };
}

describe('keepwork/client’s imports', () => {
  it('reach only src/client and import-free modules of src/core', () => {
    const { files, packages } = importGraph(join(REPO, 'src/client/index.ts'));
    assert.deepEqual(packages, [], 'no package and no node: built-in');
    assert.deepEqual(
      files.filter((f) => !f.startsWith('src/client/') && !f.startsWith('src/core/')),
      [],
      'only src/client and src/core',
    );
    assert.ok(files.includes('src/core/errors.ts') && files.includes('src/client/attempt.ts'), files.join(' '));
  });

  it('the graph walk sees a package import (it can fail)', () => {
    const { packages } = importGraph(join(REPO, 'src/core/logger.ts'));
    assert.ok(
      packages.some((p) => p.startsWith('pino ')),
      packages.join(', '),
    );
  });
});
