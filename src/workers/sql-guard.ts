/**
 * The guest-SQL guard (docs/architecture.md): handlers never see keepwork's internal tables and cannot
 * break the event's transaction or the database file. The SQL is read as SQLite reads it
 * (sql-tokens.ts: comments dropped, quotes undone) and split into statements, a `CREATE TRIGGER … BEGIN
 * … END` being one statement whatever its body holds. It is refused with `SqlRefused`, before
 * anything runs, when:
 *   - a name, bare or quoted ("…", […], `…`), holds `_keep_` (identifiers are case-insensitive), or
 *     a string literal is such a name (`'_keep_meta'`, which SQLite takes for a table name where one is
 *     expected): in a trigger's body as anywhere else;
 *   - it uses ATTACH, DETACH or VACUUM (VACUUM INTO writes a copy elsewhere);
 *   - it uses ROLLBACK anywhere: as a statement, but also `INSERT OR ROLLBACK`, `ON CONFLICT
 *     ROLLBACK` and a trigger's `RAISE(ROLLBACK, …)` end the event's transaction midway, after which
 *     the handler's statements would commit one by one;
 *   - a statement controls transactions (BEGIN, COMMIT, END, SAVEPOINT, RELEASE);
 *   - a PRAGMA is not a read-only query: a name outside READ_PRAGMAS / QUERY_PRAGMAS, or a value
 *     given to one of READ_PRAGMAS (`PRAGMA user_version = 5`, `PRAGMA user_version(5)` set it);
 *   - it calls load_extension(), or leaves a string or quoted name open.
 * String literals and comments are otherwise free: `SELECT '_keep_ is a prefix'` is allowed while
 * `SELECT * FROM "_KEEP_alarm"` is not.
 */
import { SqlRefused } from '../core/errors.js';
import { tokenize, type Token } from './sql-tokens.js';

/** Read-only without a value; given one (`= v` or `(v)`), most of them set something: refused. */
const READ_PRAGMAS = new Set([
  'user_version',
  'application_id',
  'page_count',
  'page_size',
  'freelist_count',
  'collation_list',
  'function_list',
]);
/** Read-only queries whose value only names what to read (a table, an index, a row limit). */
const QUERY_PRAGMAS = new Set([
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
]);
const TX_WORDS = new Set(['BEGIN', 'COMMIT', 'END', 'SAVEPOINT', 'RELEASE']);
const REFUSED_WORDS = new Set(['ATTACH', 'DETACH', 'VACUUM']);
/** A string literal SQLite would take for an internal table's name. */
const INTERNAL_NAME = /^_keep_[a-z0-9_$]*$/i;

/**
 * SQL texts the guard passed, remembered per thread (the verdict depends on the text alone): a
 * handler's statements are the same few texts on every actor, each read again (tokens,
 * statements) at every actor's first prepare. Refused texts are not kept. Bounded in count and in
 * length; past the count the oldest go.
 */
const PASSED_MAX = 512;
const PASSED_CHARS_MAX = 4096;
const passed = new Set<string>();

export function checkGuestSql(sql: unknown): string {
  if (typeof sql !== 'string') throw new SqlRefused(`SQL must be a string, got ${typeof sql}`);
  if (passed.has(sql)) return sql;
  checkText(sql);
  if (sql.length <= PASSED_CHARS_MAX) {
    passed.add(sql);
    if (passed.size > PASSED_MAX) passed.delete(passed.values().next().value!);
  }
  return sql;
}

function checkText(sql: string): void {
  const refuse = (why: string): never => {
    throw new SqlRefused(`refused SQL (${why}); nothing ran: ${sql.length > 120 ? sql.slice(0, 117) + '...' : sql}`);
  };
  const { tokens, unterminatedAt } = tokenize(sql);
  if (unterminatedAt >= 0) refuse(`a quote opened at character ${unterminatedAt} is never closed`);
  for (const t of tokens) {
    const why = tokenRefusal(t);
    if (why) refuse(why);
  }
  for (const statement of statements(tokens)) {
    const why = statementRefusal(statement);
    if (why) refuse(why);
  }
}

function tokenRefusal(t: Token): string | undefined {
  const upper = t.text.toUpperCase();
  const name = t.kind === 'word' || t.kind === 'ident' || t.kind === 'number';
  if ((name && upper.includes('_KEEP_')) || (t.kind === 'string' && INTERNAL_NAME.test(t.text)))
    return 'tables named _keep_ are internal to keepwork';
  if (name && upper === 'LOAD_EXTENSION') return 'load_extension is not allowed';
  if (t.kind !== 'word') return undefined;
  if (REFUSED_WORDS.has(upper)) return `${upper} is not allowed in actor SQL`;
  if (upper === 'ROLLBACK')
    return 'ROLLBACK, OR ROLLBACK, ON CONFLICT ROLLBACK and RAISE(ROLLBACK) would end the event’s transaction; throw instead';
  return undefined;
}

/**
 * The statements, split at `;` — except inside a `CREATE [TEMP] TRIGGER`, which ends only at the
 * `;` after its `END`, and that END follows the `;` of the body's last command (SQLite's grammar:
 * every command of a trigger body ends with `;`), so a CASE … END inside the body does not end it.
 */
export function statements(tokens: readonly Token[]): Token[][] {
  const out: Token[][] = [];
  let current: Token[] = [];
  for (const t of tokens) {
    if (isPunct(t, ';') && !(isTrigger(current) && !endsTrigger(current))) {
      if (current.length > 0) out.push(current);
      current = [];
    } else current.push(t);
  }
  if (current.length > 0) out.push(current);
  return out;
}

function statementRefusal(statement: Token[]): string | undefined {
  let k = 0;
  // EXPLAIN [QUERY PLAN] compiles the statement: a PRAGMA takes effect while it compiles.
  if (isWord(statement[k], 'EXPLAIN')) k++;
  if (isWord(statement[k], 'QUERY') && isWord(statement[k + 1], 'PLAN')) k += 2;
  const first = statement[k];
  if (first?.kind !== 'word') return undefined;
  const word = first.text.toUpperCase();
  if (TX_WORDS.has(word)) return `${word}: each event already runs in one transaction, committed on return`;
  if (word === 'PRAGMA') return pragmaRefusal(statement.slice(k + 1));
  return undefined;
}

/** `PRAGMA [schema.]name [= value | (value)]`: only read-only queries. */
function pragmaRefusal(rest: Token[]): string | undefined {
  const isName = (t: Token | undefined) => t?.kind === 'word' || t?.kind === 'ident';
  let k = isName(rest[0]) && isPunct(rest[1], '.') ? 2 : 0;
  const nameToken = rest[k];
  const name = isName(nameToken) ? nameToken!.text.toLowerCase() : '';
  k++;
  const allowed = [...READ_PRAGMAS, ...QUERY_PRAGMAS].join(', ');
  if (!READ_PRAGMAS.has(name) && !QUERY_PRAGMAS.has(name)) return `PRAGMA ${name} is not allowed; allowed: ${allowed}`;
  if (k === rest.length) return undefined;
  if (READ_PRAGMAS.has(name)) return `PRAGMA ${name} may only be read: setting it is not allowed`;
  const value = isPunct(rest[k], '=') ? rest.slice(k + 1) : isPunct(rest[k], '(') && isPunct(rest.at(-1), ')') ? rest.slice(k + 1, -1) : [];
  if (!isPragmaValue(value)) return `PRAGMA ${name} takes one name or number: PRAGMA ${name}(t)`;
  return undefined;
}

/** One name, string or number, the number maybe signed. */
function isPragmaValue(value: Token[]): boolean {
  const [a, b] = value;
  if (value.length === 2) return (isPunct(a, '-') || isPunct(a, '+')) && b?.kind === 'number';
  return value.length === 1 && a!.kind !== 'punct' && a!.kind !== 'param';
}

function isTrigger(statement: Token[]): boolean {
  let k = isWord(statement[0], 'CREATE') ? 1 : -1;
  if (k < 0) return false;
  if (isWord(statement[k], 'TEMP') || isWord(statement[k], 'TEMPORARY')) k++;
  return isWord(statement[k], 'TRIGGER');
}

function endsTrigger(statement: Token[]): boolean {
  const n = statement.length;
  return n >= 2 && isWord(statement[n - 1], 'END') && isPunct(statement[n - 2], ';');
}

function isWord(t: Token | undefined, upper: string): boolean {
  return t?.kind === 'word' && t.text.toUpperCase() === upper;
}

function isPunct(t: Token | undefined, c: string): boolean {
  return t?.kind === 'punct' && t.text === c;
}
