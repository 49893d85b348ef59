/**
 * The protocol lint (README.md "Layout", docs/simulator.md): protocol code takes time, randomness
 * and timers from its caller, so the same code runs in workers and in the deterministic simulator.
 *
 * Fails (exit 1, one `file:line:col rule` line each) when a file under a protocol folder reads:
 *   Date.now · new Date() / Date() without arguments · performance.now · process.hrtime
 *   Math.random · setTimeout / setInterval / setImmediate (also via globalThis or node:timers)
 *   crypto.random* / getRandomValues (as a property or a named import from node:crypto)
 * It parses with the TypeScript compiler, so comments and strings never trigger it and aliases
 * such as `const { now } = Date` or `import { randomUUID } from 'node:crypto'` do.
 *
 *   tsx scripts/lint-protocol.ts [--root DIR]     (default: the project root)
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { filesUnder, runLint, type Violation } from './lint-support.js';

export type { Violation };

export const PROTOCOL_PATHS = ['src/alarms', 'src/replication', 'src/leases', 'src/workers', 'src/store/memory.ts'];

const TIMERS = new Set(['setTimeout', 'setInterval', 'setImmediate']);
const RANDOM_PROPS = /^(random[A-Z]\w*|randomBytes|getRandomValues)$/;
const CRYPTO_MODULES = new Set(['crypto', 'node:crypto']);
const TIMER_MODULES = new Set(['timers', 'node:timers', 'timers/promises', 'node:timers/promises']);

function ruleFor(node: ts.Node): string | undefined {
  if (ts.isPropertyAccessExpression(node)) return ruleForAccess(node.expression.getText(), node.name.text);
  if (ts.isElementAccessExpression(node) && ts.isStringLiteral(node.argumentExpression)) {
    return ruleForAccess(node.expression.getText(), node.argumentExpression.text);
  }
  if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && node.expression.getText() === 'Date') {
    if (!node.arguments || node.arguments.length === 0)
      return `${ts.isNewExpression(node) ? 'new ' : ''}Date() reads the clock: use the injected Clock`;
  }
  if (ts.isIdentifier(node) && TIMERS.has(node.text) && !isPropertyName(node))
    return `${node.text} is a real timer: use clock.setTimer/sleep`;
  if (ts.isVariableDeclaration(node) && ts.isObjectBindingPattern(node.name) && node.initializer) {
    const from = node.initializer.getText();
    for (const el of node.name.elements) {
      const prop = (el.propertyName ?? el.name).getText();
      const rule = ruleForAccess(from, prop);
      if (rule) return rule;
    }
  }
  if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) return ruleForImport(node);
  return undefined;
}

function ruleForAccess(object: string, prop: string): string | undefined {
  if (object === 'Date' && prop === 'now') return 'Date.now reads the clock: use the injected Clock';
  if (object === 'performance' && prop === 'now') return 'performance.now reads the clock: use the injected Clock';
  if (object === 'process' && (prop === 'hrtime' || prop === 'uptime')) return `process.${prop} reads the clock: use the injected Clock`;
  if (object === 'Math' && prop === 'random') return 'Math.random: use the injected Random';
  if (object === 'globalThis' && TIMERS.has(prop)) return `${prop} is a real timer: use clock.setTimer/sleep`;
  if (RANDOM_PROPS.test(prop) && /crypto/i.test(object)) return `crypto.${prop}: use the injected Random`;
  return undefined;
}

function ruleForImport(node: ts.ImportDeclaration): string | undefined {
  const from = (node.moduleSpecifier as ts.StringLiteral).text;
  if (TIMER_MODULES.has(from)) return `import from ${from}: use the injected Clock`;
  const named = node.importClause?.namedBindings;
  if (CRYPTO_MODULES.has(from) && named && ts.isNamedImports(named)) {
    const hit = named.elements.find((e) => RANDOM_PROPS.test((e.propertyName ?? e.name).text));
    if (hit) return `import { ${hit.getText()} } from ${from}: use the injected Random`;
  }
  return undefined;
}

/** `x.setTimeout` or `{ setTimeout: … }`: a name, not the global. */
function isPropertyName(node: ts.Identifier): boolean {
  const p = node.parent;
  return (
    (ts.isPropertyAccessExpression(p) && p.name === node) || (ts.isPropertyAssignment(p) && p.name === node) || ts.isMethodDeclaration(p)
  );
}

export function lintSource(file: string, text: string): Violation[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Violation[] = [];
  const visit = (node: ts.Node) => {
    const rule = ruleFor(node);
    if (rule) {
      const { line, character } = source.getLineAndCharacterOfPosition(node.getStart());
      out.push({ file, line: line + 1, column: character + 1, rule });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

export function lintProject(root: string): Violation[] {
  return PROTOCOL_PATHS.flatMap((p) => filesUnder(join(root, p))).flatMap((f) => lintSource(relative(root, f), readFileSync(f, 'utf8')));
}

runLint(import.meta.url, 'protocol lint', PROTOCOL_PATHS.join(', '), lintProject);
