/**
 * No file in the repository may point outside it: every tracked file (`git ls-files`; a walk when
 * the root is not a git checkout) is refused when it
 *
 *   - names the design notes that lived next to the repository during its development
 *     (`OUTSIDE_REFS`). The project's own docs say it all: docs/alarm-index.md (the alarm index,
 *     R1–R4, the owner fence, the empty-bucket rule), docs/architecture.md (the rest),
 *     docs/s3-providers.md (S3 servers);
 *   - names an issue or a working session by number (`TRACKER_REF`: the word "issue", "issues",
 *     "session" or "sessions", any case, then a number, with a space or `#` between), a tracker
 *     the repository does not hold. A comment or a doc says what the code does and why; the
 *     commit message is where an issue is named.
 *
 * One `file:line:col rule` line per occurrence, exit 1 (lint-support.ts).
 *
 * Usage: tsx scripts/lint-outside-refs.ts [--root DIR]
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { runLint, type Violation } from './lint-support.js';

/** What is refused, with where to point instead (split so this file does not match itself). */
export const OUTSIDE_REFS: ReadonlyArray<readonly [string, string]> = [
  ['..' + '/shared', 'a folder outside the repository'],
  ['/work/' + 'shared', 'a folder outside the repository'],
  ['DESIGN' + '.md', 'a design note outside the repository: link docs/architecture.md or docs/alarm-index.md'],
  ['STYLE' + '.md', 'a style note outside the repository'],
  ['seeds/' + '000_', 'the decision record outside the repository: link docs/alarm-index.md'],
  ['notes/' + 's3-server.md', 'a note outside the repository: link docs/s3-providers.md'],
];

/**
 * An issue or session named by number — `issue N`, `Issues N and M`, `issue #N`, `(session N)` with
 * N in digits — but not the words alone, `tissue N`, or a name such as `drain-10k-sessionN` (no
 * space or `#` before the number). Global: use it with `matchAll`.
 */
export const TRACKER_REF = /\b(?:issues?|sessions?)(?:\s+#?|\s*#)\d+/gi;

const TRACKER_WHY = 'a tracker the repository does not hold: say what the code does and why, and name the issue in the commit message';

/** The outside references in one file's text, one violation per occurrence, in text order. */
export function outsideRefs(file: string, text: string): Violation[] {
  const out: Violation[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    for (const [needle, why] of OUTSIDE_REFS) {
      for (let at = line.indexOf(needle); at >= 0; at = line.indexOf(needle, at + needle.length)) {
        out.push({ file, line: i + 1, column: at + 1, rule: `points outside the repository: "${needle}" (${why})` });
      }
    }
    for (const m of line.matchAll(TRACKER_REF)) {
      out.push({ file, line: i + 1, column: m.index + 1, rule: `names an issue or session: "${m[0]}" (${TRACKER_WHY})` });
    }
  });
  return out.sort((a, b) => a.line - b.line || a.column - b.column);
}

export function lintOutsideRefs(root: string): Violation[] {
  return trackedFiles(root).flatMap((file) => {
    const body = readFileSync(join(root, file));
    if (body.subarray(0, 8000).includes(0)) return []; // binary
    return outsideRefs(file, body.toString('utf8'));
  });
}

function trackedFiles(root: string): string[] {
  const git = spawnSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' });
  if (git.status === 0) return git.stdout.split('\0').filter((f) => f !== '' && isFile(join(root, f)));
  return walk(root, root);
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false; // deleted but not yet committed
  }
}

function walk(root: string, dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (d.name === 'node_modules' || d.name === '.git' || d.name === 'dist') return [];
    const path = join(dir, d.name);
    return d.isDirectory() ? walk(root, path) : d.isFile() ? [relative(root, path)] : [];
  });
}

runLint(import.meta.url, 'lint-outside-refs', 'every tracked file', lintOutsideRefs);
