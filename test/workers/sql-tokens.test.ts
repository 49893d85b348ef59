import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { tokenize } from '../../src/workers/sql-tokens.js';

const kinds = (sql: string) => tokenize(sql).tokens.map((t) => `${t.kind}:${t.text}`);

describe('SQL tokens, as SQLite splits them', () => {
  it('drops comments and whitespace, undoes doubled quotes, keeps names, strings, numbers and parameters apart', () => {
    assert.deepEqual(kinds(`SELECT "a""b", 'it''s' -- note\n FROM [x y] /* c */ JOIN \`z\`\`\``), [
      'word:SELECT',
      'ident:a"b',
      'punct:,',
      "string:it's",
      'word:FROM',
      'ident:x y',
      'word:JOIN',
      'ident:z`',
    ]);
    assert.deepEqual(kinds("?1 ? :a @b $c 1.5e3 .5 0x1F X'00'"), [
      'param:?1',
      'param:?',
      'param::a',
      'param:@b',
      'param:$c',
      'number:1.5e3',
      'number:.5',
      'number:0x1F',
      'word:X',
      'string:00',
    ]);
  });

  it('a name holds every character past 0x7f (SQLite has no other whitespace than space, tab, CR, LF, FF)', () => {
    assert.deepEqual(kinds('a\u00a0COMMIT'), ['word:a\u00a0COMMIT']);
  });

  it('an open string or quoted name stops the tokens where it opened; an open comment runs to the end', () => {
    assert.equal(tokenize("SELECT 'abc").unterminatedAt, 7);
    assert.equal(tokenize('SELECT [abc').unterminatedAt, 7);
    assert.deepEqual(tokenize('SELECT 1 /* to the end').tokens.length, 2);
    assert.equal(tokenize('SELECT 1 /* to the end').unterminatedAt, -1);
  });

  it('any text: a quoted string or name comes back as its content, whatever it holds', () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom("'", '"', '`'), (content, q) => {
        const quoted = q + content.split(q).join(q + q) + q;
        const { tokens, unterminatedAt } = tokenize(`x ${quoted} y`);
        assert.equal(unterminatedAt, -1);
        assert.deepEqual(
          tokens.map((t) => t.text),
          ['x', content, 'y'],
        );
      }),
    );
  });

  it('never throws, and every token is made of the text it came from', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'ab_ ;\'"`[]-/*\n.?:1E$\u00e9()') }), (sql) => {
        for (const t of tokenize(sql).tokens) if (t.kind !== 'string' && t.kind !== 'ident') assert.ok(sql.includes(t.text));
      }),
    );
  });
});
