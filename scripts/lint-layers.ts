/**
 * The layer lint: imports inside `src/` point down the declared order, never up or sideways.
 *
 *   core → store → leases, replication → alarms → workers → main → http, ops, client → bench → cli → (src/*.ts)
 *
 * A folder may import from its own folder and from any folder of a lower rank; two folders of the
 * same rank (leases and replication; http, ops and client) do not import each other. The package's
 * top-level files (`src/index.ts`, `src/actor.ts`) sit above everything. A folder not in the list
 * is an error, so a new room has to be placed in the order before it can be used.
 *
 * Fails (exit 1, one `file:line:col message` line each) on an upward or sideways import, static
 * (`import`/`export … from`) or dynamic (`import('…')`), type-only imports included.
 *
 * Also: a package that is heavy to load and needed only by one kind of bucket (the AWS SDK,
 * megabytes resident in each thread that loads it) is loaded on demand: `LOADED_ON_DEMAND` lists
 * them, and `src/` imports them with `import('…')` or for types only (`import type`), never with a
 * static import that loads them when the module does. (A bare package, not a module of `src/`: from
 * a worker thread, tsx's hooks do not reach `import()` of a `.ts` file; see class-loader.ts.)
 *
 *   tsx scripts/lint-layers.ts [--root DIR]     (default: the project root)
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { filesUnder, runLint, type Violation } from './lint-support.js';

/** Each layer's rank: a file may import from layers of a strictly lower rank, and from its own. */
export const LAYERS: Readonly<Record<string, number>> = Object.freeze({
  core: 0,
  store: 1,
  leases: 2,
  replication: 2,
  alarms: 3,
  workers: 4,
  main: 5,
  http: 6,
  ops: 6,
  client: 6,
  bench: 7,
  cli: 8,
  '.': 9,
});

/** Packages (by prefix) that `src/` loads with `import()` only (their users: src/store/s3/sdk-client.ts, s3/credentials.ts). */
export const LOADED_ON_DEMAND: readonly string[] = Object.freeze(['@aws-sdk/', '@smithy/']);

/** The layer of a path relative to `src/` (`main/node.ts` → `main`, `index.ts` → `.`). */
export function layerOf(pathInSrc: string): string {
  const parts = pathInSrc.split('/');
  return parts.length === 1 ? '.' : parts[0]!;
}

/** Why `from` (a file under src/) may not import `to` (another), or undefined when it may. */
export function importRule(from: string, to: string): string | undefined {
  const a = layerOf(from);
  const b = layerOf(to);
  if (a === b) return undefined;
  const ra = LAYERS[a];
  const rb = LAYERS[b];
  if (ra === undefined) return `src/${a}/ is not a declared layer (scripts/lint-layers.ts LAYERS)`;
  if (rb === undefined) return `src/${b}/ is not a declared layer (scripts/lint-layers.ts LAYERS)`;
  if (rb < ra) return undefined;
  return rb === ra ? `${a} imports ${b}, a layer beside it (${to})` : `${a} imports ${b}, a layer above it (${to})`;
}

/** How a module is imported: `loaded` when the import loads it at once (a static import that is not for types only). */
interface Specifier {
  text: string;
  node: ts.Node;
  loaded: boolean;
}

function typeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) return node.isTypeOnly;
  const clause = node.importClause;
  if (!clause) return false; // `import 'x'`: loaded for its effects
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return !clause.name && named !== undefined && ts.isNamedImports(named) && named.elements.every((e) => e.isTypeOnly);
}

function specifiers(source: ts.SourceFile): Specifier[] {
  const out: Specifier[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      out.push({ text: node.moduleSpecifier.text, node, loaded: !typeOnly(node) });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      out.push({ text: node.arguments[0].text, node, loaded: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Violations of one file, `file` given relative to the root (`src/...`). */
export function lintLayersSource(file: string, text: string): Violation[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const from = relative('src', file);
  const out: Violation[] = [];
  for (const { text: spec, node, loaded } of specifiers(source)) {
    let rule: string | undefined;
    if (spec.startsWith('.')) {
      const to = relative('src', join(dirname(file), spec)).replace(/\.js$/, '.ts');
      if (to.startsWith('..')) continue;
      rule = importRule(from, to);
    } else {
      rule = onDemandRule(spec, loaded);
    }
    if (!rule) continue;
    const { line, character } = source.getLineAndCharacterOfPosition(node.getStart());
    out.push({ file, line: line + 1, column: character + 1, rule });
  }
  return out;
}

/** Why a package may not be imported so (`loaded`: by a static import that is not for types only), or undefined. */
export function onDemandRule(pkg: string, loaded: boolean): string | undefined {
  if (!loaded || !LOADED_ON_DEMAND.some((prefix) => pkg.startsWith(prefix))) return undefined;
  return `${pkg} is loaded on demand: use \`await import('${pkg}')\` (or \`import type\`)`;
}

export function lintLayers(root: string): Violation[] {
  return filesUnder(join(root, 'src')).flatMap((f) => lintLayersSource(relative(root, f), readFileSync(f, 'utf8')));
}

runLint(import.meta.url, 'layer lint', 'src/ imports point down', (root) => lintLayers(resolve(root)));
