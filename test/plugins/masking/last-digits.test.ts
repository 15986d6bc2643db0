/**
 * The phone and credit_card masks were rewritten for speed (one regular expression instead of
 * five, plugins/masking/methods.ts): this pins that the new SQL gives exactly what the former
 * expression gave, and what the JavaScript twin gives, for a table of inputs chosen to reach
 * every branch (NULL, empty, fewer digits than kept, only separators, letters, `*` and `#` in
 * the value, digits that are not ASCII, combining marks, emoji, newlines, quotes, very long
 * values, numbers of every type), for several `show_last`, in a real DuckDB; and that a viewer's
 * query gives the same masked values on each rewrite path (late, spliced, deparsed).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { MethodCatalog } from '../../../plugins/masking/catalog.js';
import { type Caller, quoteLiteral } from '../../../sdk/index.js';
import { bootApp, makeProject } from '../../helpers.js';

/** The expression phone and credit_card compiled to before (kept verbatim as the reference). */
function formerLastDigitsSql(column: string, n: number): string {
  const v = `CAST(${column} AS VARCHAR)`;
  const tail = `regexp_extract(${v}, '([0-9][^0-9]*){${n}}$')`;
  const digitsMasked = `(translate(left(${v}, length(${v}) - length(${tail})), '0123456789', '**********') || ${tail})`;
  return `CASE WHEN translate(${v}, '0123456789 +().-/', '') = '' THEN ${digitsMasked} ELSE regexp_replace(${digitsMasked}, '[^0-9* +().\\-/]', '*', 'g') END`;
}

const TEXTS: Array<string | null> = [
  null,
  '',
  ' ',
  '0',
  '1',
  '12',
  '123',
  '1234',
  '12345',
  '0000',
  '+44 20 7946 0001',
  '+1 (555) 012-3456',
  '555.123.4567',
  '555/123/4567',
  '4111-1111-1111-1234',
  '4111 1111 1111 1234',
  '4111111111111234',
  '-1234',
  '1234-',
  '()+-./ ',
  '---',
  'abc',
  'ab1234567x',
  'phone: 555-0142 ext. 12',
  '555-0142 ext.',
  '*',
  '**12**',
  '1*2*3*4*5',
  'a*b',
  '#1#2345',
  '##',
  '%_\\',
  "O'Brien 1234",
  '12\n34\n56',
  '\n1234\n',
  '12\t34',
  'ü1234',
  '١٢٣٤٥',
  '１２３４５',
  '📞 555 0142',
  '5📞5📞5📞0📞1',
  'e\u0301 1234',
  '1\u0301234',
  '\u00a01234',
  '9'.repeat(1000),
  '1-'.repeat(300),
  'x'.repeat(500) + '1234',
];

const SHOW_LAST = [0, 1, 2, 3, 4, 5, 16, 1000];

describe('phone and credit_card masks: the cheaper SQL gives what the former SQL and the JavaScript twin give', () => {
  let app: App;
  const catalog = new MethodCatalog();
  const admin: Caller = { username: 'a', role: 'admin', authenticated: true };
  const viewer: Caller = { username: 'v', role: 'viewer', authenticated: true };

  before(async () => {
    app = await bootApp(makeProject());
    const values = TEXTS.map((t, i) => `(${i}, ${t === null ? 'NULL' : quoteLiteral(t)})`).join(', ');
    await app.db.run(`CREATE TABLE samples AS SELECT * FROM (VALUES ${values}) v(i, s)`);
  });
  after(async () => app.close());

  it('uses one regular expression where the former used five', () => {
    const expr = catalog.expression('phone', '"s"', catalog.normalizeConfig('phone', {}), { type: 'VARCHAR' });
    assert.equal(expr.match(/regexp_/g)?.length, 2, expr); // the tail and its length: one subexpression
    assert.equal(formerLastDigitsSql('"s"', 4).match(/regexp_/g)?.length, 5);
  });

  for (const method of ['phone', 'credit_card']) {
    it(`${method}: every text, every show_last`, async () => {
      for (const n of SHOW_LAST) {
        const cfg = catalog.normalizeConfig(method, { show_last: n });
        const expr = catalog.expression(method, '"s"', cfg, { type: 'VARCHAR' });
        const r = await app.db.query(`SELECT i, s, ${formerLastDigitsSql('"s"', n)} AS former, ${expr} AS now FROM samples ORDER BY i`);
        assert.equal(r.rows.length, TEXTS.length);
        for (const [i, s, former, now] of r.rows) {
          const label = `${method} show_last=${n} on ${JSON.stringify(TEXTS[Number(i)])}`;
          assert.equal(s, TEXTS[Number(i)], `DuckDB read the sample back as written: ${label}`);
          assert.equal(now, former, `SQL, new against former: ${label}`);
          assert.equal(catalog.apply(method, s, cfg, { type: 'VARCHAR' }), former, `JavaScript twin against the former SQL: ${label}`);
        }
      }
    });
  }

  it('numbers of every type, as their text', async () => {
    const literals: Array<[string, string]> = [
      ['5551234', 'INTEGER'],
      ['-5551234', 'INTEGER'],
      ['0', 'INTEGER'],
      ['4111111111111234', 'BIGINT'],
      ['-9223372036854775808', 'BIGINT'],
      ['12', 'SMALLINT'],
      ['170141183460469231731687303715884105727', 'HUGEINT'],
      ['12.34', 'DECIMAL(10,2)'],
      ['-0.5', 'DECIMAL(4,2)'],
      ['1.5e20', 'DOUBLE'],
      ['1234.0', 'DOUBLE'],
      ["'nan'", 'DOUBLE'],
      ["'-inf'", 'FLOAT'],
      ["DATE '2024-01-05'", 'DATE'],
      ['NULL', 'INTEGER'],
    ];
    for (const [literal, type] of literals) {
      for (const n of [0, 2, 4, 30]) {
        const cfg = catalog.normalizeConfig('phone', { show_last: n });
        const expr = catalog.expression('phone', '"c"', cfg, { type });
        const r = await app.db.query(`SELECT ${formerLastDigitsSql('"c"', n)} AS former, ${expr} AS now, c FROM (SELECT CAST(${literal} AS ${type}) AS c)`);
        const [former, now, c] = r.rows[0];
        assert.equal(now, former, `${type} ${literal} show_last=${n}`);
        // The twin sees the value as the client does and prints it with asDuckText, which matches
        // DuckDB's text for integers only (a DECIMAL -0.50 arrives as -0.5, a DOUBLE 1.5e20 as
        // 150000000000000000000): it is compared for those (the SQL, above, for every type).
        if (/^(INTEGER|BIGINT|SMALLINT)$/.test(type)) assert.equal(catalog.apply('phone', c, cfg, { type }), former, `JavaScript twin: ${type} ${literal} show_last=${n}`);
      }
    }
  });

  it("a viewer's query gives the former expression's values on the late, spliced and deparsed paths", async () => {
    await app.db.run('CREATE TABLE cards AS SELECT i, s AS phone, s AS card FROM samples');
    await app.queries.run({ sql: `CREATE MASKING POLICY ON main.cards.phone METHOD phone`, caller: admin, purpose: 'query' });
    await app.queries.run({ sql: `CREATE MASKING POLICY ON main.cards.card METHOD credit_card CONFIG '{"show_last": 2}'`, caller: admin, purpose: 'query' });
    const expected = (await app.db.query(`SELECT i, ${formerLastDigitsSql('phone', 4)}, ${formerLastDigitsSql('card', 2)} FROM cards ORDER BY i`)).rows;
    assert.ok(expected.some(([, p]) => p === '+** ** **** 0001'));
    for (const sql of [
      'SELECT c.i, c.phone, c.card FROM cards c ORDER BY c.i', // late
      'SELECT i, phone, card FROM cards ORDER BY i', // spliced
      'SELECT i, phone, card FROM cards TABLESAMPLE 100% ORDER BY i', // deparsed
    ]) {
      const r = await app.queries.run({ sql, caller: viewer, purpose: 'query', limit: 1000 });
      assert.deepEqual(r.rows, expected, sql);
    }
    // The admin is exempt: the raw values come back, so the comparison above did mask.
    const raw = await app.queries.run({ sql: 'SELECT i, phone FROM cards ORDER BY i', caller: admin, purpose: 'query', limit: 1000 });
    assert.equal(raw.rows[10][1], '+44 20 7946 0001');
  });
});
