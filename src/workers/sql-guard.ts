/**
 * The guest-SQL guard (docs/architecture.md): handlers never see keepwork's internal tables and cannot
 * break the event's transaction or the database file. A statement is refused with `SqlRefused`
 * before anything runs when it:
 *   - names `_keep_` anywhere outside a string literal (identifiers are case-insensitive);
 *   - uses ATTACH, DETACH or VACUUM (VACUUM INTO writes a copy elsewhere);
 *   - controls transactions (BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE as a statement);
 *   - runs a PRAGMA outside a read-only allowlist (writable_schema, journal_mode, ... refused);
 *   - calls load_extension().
 * String literals and comments are blanked first, so `SELECT '_keep_'` is allowed while
 * `SELECT * FROM "_KEEP_alarm"` is not.
 */
import { SqlRefused } from '../core/errors.js';

const ALLOWED_PRAGMAS = new Set([
  'table_info',
  'table_xinfo',
  'table_list',
  'index_list',
  'index_info',
  'index_xinfo',
  'foreign_key_list',
  'foreign_key_check',
  'integrity_check',
  'quick_check',
  'user_version',
  'application_id',
  'page_count',
  'page_size',
  'freelist_count',
  'collation_list',
  'function_list',
]);
const TX_WORDS = new Set(['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE']);

/** Replaces comments and string literals with spaces; keeps quoted identifiers' contents. */
function blankLiterals(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end;
      out += ' ';
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
      out += ' ';
    } else if (c === "'") {
      i = skipQuoted(sql, i, "'");
      out += "''";
    } else if (c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c;
      const end = skipQuoted(sql, i, close);
      out += ' ' + sql.slice(i + 1, end - 1) + ' ';
      i = end;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Index just past the closing quote (a doubled quote is an escaped one). */
function skipQuoted(sql: string, start: number, close: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === close) {
      if (close !== ']' && sql[i + 1] === close) i += 2;
      else return i + 1;
    } else i++;
  }
  return sql.length;
}

export function checkGuestSql(sql: unknown): string {
  if (typeof sql !== 'string') throw new SqlRefused(`SQL must be a string, got ${typeof sql}`);
  const text = blankLiterals(sql).toUpperCase();
  const refuse = (why: string): never => {
    throw new SqlRefused(`refused SQL (${why}); nothing ran: ${sql.length > 120 ? sql.slice(0, 117) + '...' : sql}`);
  };
  if (text.includes('_KEEP_')) refuse('tables named _keep_ are internal to keepwork');
  if (/\bLOAD_EXTENSION\s*\(/.test(text)) refuse('load_extension is not allowed');
  const words = /\b(ATTACH|DETACH|VACUUM)\b/.exec(text);
  if (words) refuse(`${words[1]} is not allowed in actor SQL`);
  for (const statement of text.split(';')) {
    const first = /^\s*([A-Z_]+)/.exec(statement)?.[1];
    if (first && TX_WORDS.has(first)) refuse(`${first}: each event already runs in one transaction, committed on return`);
    if (first === 'PRAGMA') {
      const name = /^\s*PRAGMA\s+(?:\w+\s*\.\s*)?(\w+)/.exec(statement)?.[1]?.toLowerCase();
      if (!name || !ALLOWED_PRAGMAS.has(name)) refuse(`PRAGMA ${name ?? ''} is not allowed; allowed: ${[...ALLOWED_PRAGMAS].join(', ')}`);
    }
  }
  return sql;
}
