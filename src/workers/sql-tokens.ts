/**
 * SQLite's SQL split into tokens, as SQLite's own tokenizer splits it, for the guest-SQL guard
 * (sql-guard.ts): comments and whitespace dropped, string literals and quoted identifiers read
 * with their doubled-quote escapes undone, so the guard sees names as SQLite will resolve them.
 *
 *   SELECT "a""b", 'it''s' -- note      ▶ word SELECT, ident a"b, punct ",", string it's
 *   [x] `y` :p ?1 @q $r 1.5e3 X'00'     ▶ ident x, ident y, param, param, param, param, number, word X, string
 *
 * kinds: `word` a bare keyword or name; `ident` a quoted identifier ("…", `…`, […]); `string` a
 * '…' literal; `number`; `param` a bound parameter (?, ?N, :n, @n, $n); `punct` one other
 * character (`;` ends a statement). A string or quoted identifier left open stops the tokens there
 * (`unterminatedAt`: SQLite refuses it too); a block comment left open runs to the end, as in SQLite.
 */

export type TokenKind = 'word' | 'ident' | 'string' | 'number' | 'param' | 'punct';

export interface Token {
  kind: TokenKind;
  /** The token's text; for `ident` and `string`, their content with escapes undone. */
  text: string;
}

export interface Tokens {
  tokens: Token[];
  /** Where a string or quoted identifier opened and never closed (-1: none). */
  unterminatedAt: number;
}

/** SQLite's identifier characters: ASCII letters, digits, `_`, `$`, and every character past 0x7f. */
const isIdChar = (c: string) => /[A-Za-z0-9_$]/.test(c) || c.charCodeAt(0) > 0x7f;
const isIdStart = (c: string) => /[A-Za-z_]/.test(c) || c.charCodeAt(0) > 0x7f;

export function tokenize(sql: string): Tokens {
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  const idRun = (from: number) => {
    let j = from;
    while (j < n && isIdChar(sql[j]!)) j++;
    return j;
  };
  while (i < n) {
    const c = sql[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r')
      i++; // SQLite's whitespace, no more
    else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2; // an open comment runs to the end, as in SQLite
    } else if (c === "'" || c === '"' || c === '`' || c === '[') {
      const close = c === '[' ? ']' : c;
      const read = readQuoted(sql, i, close);
      if (!read) return { tokens, unterminatedAt: i };
      tokens.push({ kind: c === "'" ? 'string' : 'ident', text: read.text });
      i = read.end;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(sql[i + 1] ?? ''))) {
      // Loosely (1.5e3, 0x1F, 1_000): a number run on into name characters is an error to SQLite anyway.
      let j = i + 1;
      while (j < n && (isIdChar(sql[j]!) || sql[j] === '.')) j++;
      tokens.push({ kind: 'number', text: sql.slice(i, j) });
      i = j;
    } else if (isIdStart(c)) {
      const j = idRun(i);
      tokens.push({ kind: 'word', text: sql.slice(i, j) });
      i = j;
    } else if (c === '?' || ((c === ':' || c === '@' || c === '$') && isIdChar(sql[i + 1] ?? ' '))) {
      const j = c === '?' ? skipDigits(sql, i + 1) : idRun(i + 1);
      tokens.push({ kind: 'param', text: sql.slice(i, j) });
      i = j;
    } else {
      tokens.push({ kind: 'punct', text: c });
      i++;
    }
  }
  return { tokens, unterminatedAt: -1 };
}

/** A quoted run from `start` (its opening quote): its content, and the index past its closing quote; null if it never closes. */
function readQuoted(sql: string, start: number, close: string): { text: string; end: number } | null {
  let text = '';
  let i = start + 1;
  for (;;) {
    const end = sql.indexOf(close, i);
    if (end < 0) return null;
    text += sql.slice(i, end);
    // A doubled quote is one quote character; `[…]` has no escape.
    if (close !== ']' && sql[end + 1] === close) {
      text += close;
      i = end + 2;
    } else return { text, end: end + 1 };
  }
}

function skipDigits(sql: string, from: number): number {
  let j = from;
  while (j < sql.length && /[0-9]/.test(sql[j]!)) j++;
  return j;
}
