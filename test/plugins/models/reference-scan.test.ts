import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DuckDatabase } from '../../../kernel/database.js';
import type { ParsedSql } from '../../../sdk/index.js';
import { scanTableReferences } from '../../../plugins/models/reference-scan.js';
import { tableReferences } from '../../../plugins/models/sqltree.js';

/** What the tree walk answers for a parse: the statement count and, for one statement, its references. */
function fromTree(parsed: Extract<ParsedSql, { ok: true }>) {
  const statements = parsed.tree.statements;
  return { statements: statements.length, refs: statements.length === 1 ? tableReferences(statements[0].node) : [] };
}

/** A seeded generator of nested queries: CTEs at every level (names reused, quoted, in other cases), subqueries in every clause, joins, set operations, table functions. */
function generatedQueries(count: number, seed: number): string[] {
  let state = seed;
  const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
  const names = ['a', 'A', 'b', '"a"', '"B"', 't', '"we""ird"', '"sp ace"', '"ünï"', 'c1'];
  const table = (d: number): string => {
    const r = random();
    if (r < 0.15 && d < 4) return `(${query(d + 1)}) AS s${d}`;
    if (r < 0.2) return "read_csv('f.csv')";
    if (r < 0.3) return `${pick(['main', 's', '"q\\"', 'cat.sch'])}.${pick(names)}`;
    return pick(names) + (random() < 0.3 ? ' AS z' : '');
  };
  const expr = (d: number): string => {
    const r = random();
    if (r < 0.1 && d < 4) return `(${query(d + 1)})`;
    if (r < 0.15 && d < 4) return `EXISTS (${query(d + 1)})`;
    if (r < 0.2) return `'str "x" \\ {"type":"BASE_TABLE"}'`;
    if (r < 0.25) return '1e400';
    return pick(['1', 'x', 'a.x', 'count(*)', "'it''s'"]);
  };
  const from = (d: number): string => {
    let s = table(d);
    for (let k = Math.floor(random() * 3); k > 0; k--) {
      const join = pick([' JOIN ', ' LEFT JOIN ', ', ', ' CROSS JOIN ']);
      s += join + table(d) + (join === ' JOIN ' || join === ' LEFT JOIN ' ? ` ON ${expr(d)} IS NULL` : '');
    }
    return s;
  };
  const select = (d: number) => `SELECT ${expr(d)}, ${expr(d)} FROM ${from(d)}${random() < 0.3 ? ` WHERE ${expr(d)} IS NOT NULL` : ''}${random() < 0.2 ? ` ORDER BY ${expr(d)}` : ''}`;
  const query = (d: number): string => {
    let body = random() < 0.2 ? `${select(d)} UNION ALL ${select(d)}` : select(d);
    if (random() < 0.45 && d < 4) {
      const ctes = new Set<string>();
      for (let k = 1 + Math.floor(random() * 3); k > 0; k--) ctes.add(`${pick(names)} AS (${query(d + 1)})`);
      body = `WITH ${random() < 0.2 ? 'RECURSIVE ' : ''}${[...ctes].join(', ')} ${body}`;
    }
    return body;
  };
  return Array.from({ length: count }, () => query(0));
}

describe('table references scanned from the parser text', () => {
  const db = new DuckDatabase(':memory:');
  after(() => db.close());

  /** Parses texts both ways discovery may (compact and full trees) and compares the scan with the walk for each. */
  async function compare(texts: string[]): Promise<{ compared: number; unsure: string[] }> {
    let compared = 0;
    const unsure: string[] = [];
    for (const compact of [true, false]) {
      const parsed = await db.parseMany(texts, { compact });
      parsed.forEach((p, i) => {
        if (!p.ok) return;
        const scanned = scanTableReferences(p.json);
        if (!scanned) return unsure.push(texts[i]!);
        const walked = fromTree(p);
        assert.deepEqual({ statements: scanned.statements, refs: walked.statements === 1 ? scanned.refs : [] }, walked, `${compact ? 'compact' : 'full'} tree of ${texts[i]}`);
        compared++;
      });
    }
    return { compared, unsure };
  }

  it('finds what the tree walk finds: CTE scoping, quoting, subqueries in every clause', async () => {
    const texts = [
      'WITH a AS (SELECT 1), b AS (SELECT * FROM a) SELECT * FROM b, (WITH a AS (SELECT * FROM a) SELECT * FROM a) q ORDER BY (SELECT max(x) FROM b)',
      'SELECT * FROM "weird""name"."ta\\ble" JOIN cat.sch.t3 USING (id)',
      'SELECT (WITH c AS (SELECT 1) SELECT * FROM c), * FROM c',
      'WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r',
      'WITH "A" AS (SELECT 1) SELECT * FROM a, "a", main.a',
      `SELECT 1e400 AS x FROM t WHERE y = 'BASE_TABLE"}' AND z = '{"type":"BASE_TABLE","table_name":"fake"}'`,
      "SELECT * FROM read_csv('x.csv'), LATERAL (SELECT * FROM t2)",
      'SELECT 1; SELECT 2',
      'FROM t1 SELECT *',
      'SELECT * FROM (PIVOT t ON a IN (1, 2) USING sum(b)) JOIN u USING (id)',
      'SELECT * FROM t AT (VERSION => 3)',
    ];
    const { compared, unsure } = await compare(texts);
    assert.equal(compared, texts.length * 2, 'every text parses and is scanned');
    assert.deepEqual(unsure, []);
  });

  it('answers the cases the walk is known to answer, by itself', async () => {
    const refs = async (sql: string) => {
      const [p] = await db.parseMany([sql], { compact: true });
      assert.ok(p!.ok);
      return scanTableReferences(p.json)!.refs.map((r) => `${r.schema}.${r.table}@${r.location}`);
    };
    // A CTE defined in a subquery does not hide a table of that name outside it.
    const scoped = 'SELECT (WITH c AS (SELECT 1) SELECT * FROM c), * FROM c';
    assert.deepEqual(await refs(scoped), [`.c@${scoped.lastIndexOf('c')}`]);
    // A CTE body sees its own WITH's names; a qualified name is never a CTE.
    const chained = 'WITH a AS (SELECT * FROM x.a), b AS (SELECT * FROM a) SELECT * FROM b JOIN main.b USING (id)';
    assert.deepEqual(await refs(chained), [`x.a@${chained.indexOf('x.a')}`, `main.b@${chained.indexOf('main.b')}`]);
    assert.deepEqual(await refs(`SELECT * FROM "q""r".t WHERE s = 'x"}'`), ['q"r.t@14']);
    const [two] = await db.parseMany(['SELECT 1; SELECT 2']);
    assert.ok(two!.ok);
    assert.equal(scanTableReferences(two.json)!.statements, 2);
  });

  it('leaves to the tree what only the tree can answer, and refuses text that is not a whole tree', async () => {
    const [show] = await db.parseMany(['SELECT * FROM (DESCRIBE t)'], { compact: true });
    assert.ok(show!.ok);
    assert.equal(scanTableReferences(show.json), null);
    const [plain] = await db.parseMany(['SELECT * FROM t'], { compact: true });
    assert.ok(plain!.ok);
    assert.equal(scanTableReferences(plain.json.slice(0, -1)), null);
    assert.equal(scanTableReferences(plain.json.replace('"table_name":"t"', '"table_name":{"x":1}')), null);
    // The serializer writes no whitespace: text with some is not its output.
    assert.equal(scanTableReferences(plain.json.replace('"table_name":"t"', '"table_name": "t"')), null);
  });

  it('agrees with the walk on generated nested queries', async () => {
    const { compared, unsure } = await compare(generatedQueries(1500, 20261129));
    // About half of the generated texts are valid SQL; every valid one is compared, compact and full.
    assert.ok(compared > 1000, `${compared} compared`);
    assert.deepEqual(unsure, []);
  });

  it('builds the tree of a parse only when it is read, and still serializes it', async () => {
    const [p] = await db.parseMany(['SELECT a FROM t'], { compact: true });
    assert.ok(p!.ok);
    assert.equal(p.tree.statements.length, 1);
    assert.equal(JSON.parse(JSON.stringify(p)).tree.statements[0].node.from_table.table_name, 't');
  });
});
