/**
 * Masking at the result (plugins/masking/result-masking.ts): where masked columns are read only
 * as whole select items of one table, the kernel's run masks the result rows with each method's
 * JavaScript twin. These tests pin that the result is the one the SQL masks give, for every
 * method it uses and every text of a corpus, that every other shape still goes through the SQL
 * rewrite, and that the final check and the row transform refuse what does not match the plan.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { MethodCatalog } from '../../../plugins/masking/catalog.js';
import { MaskingEnforcer } from '../../../plugins/masking/enforce.js';
import { PolicyStore } from '../../../plugins/masking/policies.js';
import { EXACT_TWINS } from '../../../plugins/masking/result-masking.js';
import type { Caller, QueryContext } from '../../../sdk/index.js';
import { bootApp, makeProject } from '../../helpers.js';

const viewer: Caller = { username: 'v', role: 'viewer', authenticated: true };
const admin: Caller = { username: 'a', role: 'admin', authenticated: true };

/** Texts where DuckDB and JavaScript string functions tend to part ways. */
const CORPUS: Array<string | null> = [
  null, '', ' ', 'a', 'Ada Lovelace', '  ada   lovelace  ', 'ada\tlove\nlace\rx\fy', 'x\u000by', '\u00a0nbsp\u00a0name', 'a\u2003b',
  'élodie Ünal', 'ß straße', 'ﬁne ǆemal', 'ŉ x', 'ᾀ ὐ', 'i̇stanbul', 'e\u0301cole', '🦆 duck', '👩‍👩‍👧 fam', "quote'd", 'back\\slash',
  'user@example.com', '@', 'a@b@c', 'no-at', '@@', 'ü@ö.de', 'a@', '@b',
  '555-0123', '+1 (555) 012-3456', '4111-1111-1111-1234', '12', '1234', 'abc', '٣٤٥٦٧٨', '１２３４５', '12a34b56', '*#*', '1'.repeat(60),
  // The digit masks' twin walks UTF-16 code units: a pair beside digits must still give one `*`.
  '1🦆2-3𝟘4 5', '🦆1234', '(*) 12/3.4+5',
  '10.0.1.1', '256.1.1.1', '1.2.3', '01.002.003.004', ' 10.0.0.1', '10.0.0.1\n', '1.2.3.4.5', '١.٢.٣.٤',
];

/** Each method the result path uses, with the configurations its tests run. */
const CONFIGS: Array<[string, Record<string, unknown>]> = [
  ['hash', {}], ['redact', {}], ['null', {}], ['partial', {}], ['partial', { show_first: 2, show_last: 2 }], ['partial', { show_last: 1 }],
  ['truncate', {}], ['truncate', { length: 1 }], ['email', {}], ['phone', {}], ['phone', { show_last: 0 }], ['credit_card', {}],
  ['credit_card', { show_last: 7 }], ['first_initial', {}], ['ip_address', {}], ['ip_address', { keep_octets: 0 }], ['ip_address', { keep_octets: 3 }],
];

const PEOPLE = `CREATE SCHEMA crm;
  CREATE TABLE crm.people (id INTEGER, name VARCHAR, email VARCHAR, phone VARCHAR, card VARCHAR, ip VARCHAR, code INTEGER, tier VARCHAR, note VARCHAR);
  INSERT INTO crm.people VALUES
    (1, 'Ada Lovelace', 'ada@example.com', '555-0123', '4111-1111-1111-1234', '10.0.1.1', 5550123, 'vip', 'first note'),
    (2, 'ß straße', 'a@b@c', '+1 (555) 012-3456', '12', '256.1.1.1', 42, 'basic', 'second'),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, 'vip', NULL),
    (4, 'élodie Ünal\tx', 'no-at', 'abc', '٣٤٥٦٧٨', ' 10.0.0.1', 7, 'basic', 'fourth note');`;

const POLICIES: Array<[string, string]> = [
  ['name', 'first_initial'],
  ['email', 'email'],
  ['phone', 'phone'],
  ['card', 'credit_card'],
  ['ip', 'ip_address'],
  // An INTEGER column: its mask is not applied at the result.
  ['code', 'phone'],
  // A conditional policy (made conditional below): not applied at the result either.
  ['note', 'partial'],
];

describe('masking at the result', () => {
  let app: App;
  /** What the last query ran: its final SQL and how many row transforms it had. */
  let ran: { sql: string; transforms: number } | null = null;

  before(async () => {
    app = await bootApp(makeProject());
    await app.db.run(PEOPLE);
    for (const [column, method] of POLICIES) {
      const r = await app.queries.run({ sql: `CREATE MASKING POLICY ON crm.people.${column} METHOD ${method}`, caller: admin, purpose: 'query' });
      if (column === 'note') {
        const route = app.routes.find((x) => x.method === 'PUT' && x.url === '/api/masking/policies/:policy_id')!;
        await route.handler({ body: { condition_column: 'tier', condition_value: 'vip' }, params: { policy_id: String(r.rows[0][0]) }, query: {}, caller: admin, headers: {}, ip: '', raw: null as never }, null as never);
      }
    }
    app.hooks.afterQuery.tapPromise('result-masking-test', async (ctx) => {
      ran = { sql: ctx.sql, transforms: ctx.rowTransforms.length };
    });
  });
  after(async () => app.close());

  it('every method it uses gives in JavaScript what its SQL gives, for every text of the corpus', async () => {
    const catalog = new MethodCatalog();
    assert.deepEqual([...new Set(CONFIGS.map(([m]) => m))].sort(), [...EXACT_TWINS].sort());
    for (const [method, config] of CONFIGS) {
      const cfg = catalog.normalizeConfig(method, config);
      const expr = catalog.expression(method, '"c"', cfg, { type: 'VARCHAR' });
      for (const text of CORPUS) {
        const r = await app.db.query(`SELECT ${expr} AS m FROM (SELECT CAST($v AS VARCHAR) AS c)`, { v: text });
        assert.equal(catalog.apply(method, text, cfg, { type: 'VARCHAR' }), r.rows[0][0], `${method} ${JSON.stringify(config)} of ${JSON.stringify(text)}`);
      }
    }
  });

  /** The viewer's rows through the kernel's run, and the rows the SQL rewrite (prepare's text) gives. */
  async function bothWays(sql: string, params?: Record<string, unknown>) {
    ran = null;
    const result = await app.queries.run({ sql, params, caller: viewer, purpose: 'query' });
    const viaRun = { sql: ran!.sql, transforms: ran!.transforms };
    const prepared = await app.queries.prepare({ sql, params, caller: viewer, purpose: 'query' });
    const expected = await app.db.query(prepared.sql, prepared.params);
    return { result, expected, viaRun, preparedSql: prepared.sql };
  }

  it('masks whole select items after execution, giving the rows the SQL masks give', async () => {
    const shapes: Array<[string, Record<string, unknown>?]> = [
      ['SELECT id, name, email, phone, card, ip FROM crm.people ORDER BY id'],
      ['SELECT p.email AS contact, id FROM crm.people p WHERE id > 1 ORDER BY id DESC LIMIT 2'],
      ['SELECT email, email AS again, upper(tier) AS t FROM crm.people WHERE tier = $tier ORDER BY id', { tier: 'basic' }],
      ['SELECT id, row_number() OVER (ORDER BY id DESC) AS r, phone FROM crm.people ORDER BY id'],
      ['SELECT "EMAIL", ID FROM CRM.PEOPLE ORDER BY id OFFSET 1'],
      ['SELECT a.email, b.tier, a.card FROM crm.people a JOIN crm.people b ON a.id = b.id + 1 WHERE b.tier <> $t ORDER BY a.id', { t: 'x' }],
      ['SELECT a.id, b.phone FROM crm.people a LEFT JOIN crm.people b ON b.id = a.id * 2 ORDER BY a.id'],
    ];
    for (const [sql, params] of shapes) {
      const { result, expected, viaRun, preparedSql } = await bothWays(sql, params);
      assert.deepEqual(result.rows, expected.rows, sql);
      assert.deepEqual(result.column_types, expected.column_types, sql);
      assert.ok(viaRun.transforms > 0 && !viaRun.sql.includes('REPLACE') && viaRun.sql.startsWith(sql), `${sql} ran as sent: ${viaRun.sql}`);
      assert.notEqual(preparedSql, sql, `prepare() still rewrites ${sql}`);
      assert.ok(result.masked_columns!.length > 0, sql);
    }
    // The masks are the policies': the first row as a viewer sees it.
    const { result } = await bothWays('SELECT id, name, email, phone, card, ip FROM crm.people ORDER BY id LIMIT 1');
    assert.deepEqual(result.rows[0], [1, 'A.L.', '***@example.com', '***-0123', '****-****-****-1234', '10.0.x.x']);
    assert.deepEqual(result.masked_columns!.map((m) => m.name), ['name', 'email', 'phone', 'card', 'ip']);
  });

  it('leaves every other shape to the SQL rewrite, with the same rows or the same refusal', async () => {
    const others = [
      'SELECT email AS id2 FROM crm.people ORDER BY id2',
      'SELECT id, email FROM crm.people ORDER BY 2',
      'SELECT DISTINCT email FROM crm.people',
      'SELECT email, count(*) AS n FROM crm.people GROUP BY email',
      'SELECT people FROM crm.people ORDER BY id',
      'SELECT * FROM crm.people ORDER BY id',
      "SELECT email || '' AS e FROM crm.people ORDER BY id",
      'WITH x AS (SELECT * FROM crm.people) SELECT email FROM x ORDER BY id',
      'SELECT (SELECT max(id) FROM crm.people) AS m, email FROM crm.people ORDER BY id',
      'SELECT code FROM crm.people ORDER BY id',
      'SELECT note, tier FROM crm.people ORDER BY id',
      'SELECT a.email FROM crm.people a JOIN crm.people b USING (id) ORDER BY a.id',
      'SELECT a.email, id FROM crm.people a JOIN (SELECT 1 AS k) b ON a.id = b.k',
      'SELECT a.email FROM crm.people a JOIN crm.people b ON a.id = b.id WHERE b.email IS NULL',
      'SELECT email FROM crm.people UNION ALL SELECT email FROM crm.people',
      'SELECT email FROM crm.people WHERE email IS NOT NULL',
      'SELECT email FROM crm.people QUALIFY row_number() OVER (ORDER BY id) < 3',
      'SELECT max(email) OVER () AS m, id FROM crm.people',
    ];
    for (const sql of others) {
      let outcome: { rows: unknown[][] } | { refused: string };
      try {
        const { result, expected, viaRun } = await bothWays(sql);
        // Some of these have no total order (DISTINCT, GROUP BY): compare the rows as sets.
        const asSet = (rows: unknown[][]) => rows.map((r) => JSON.stringify(r)).sort();
        assert.deepEqual(asSet(result.rows), asSet(expected.rows), sql);
        assert.equal(viaRun.transforms, 0, `${sql} is not masked at the result`);
        assert.notEqual(viaRun.sql.split('\nLIMIT')[0], sql, `${sql} ran rewritten`);
        outcome = { rows: result.rows };
      } catch (e: any) {
        if (e?.code === 'ERR_ASSERTION') throw e;
        outcome = { refused: e.code };
        await assert.rejects(app.queries.prepare({ sql, caller: viewer, purpose: 'query' }), (p: any) => p.code === e.code, sql);
      }
      assert.ok(outcome, sql);
    }
  });

  it('masks the CSV stream the same way', async () => {
    const sql = 'SELECT id, name, email, phone, card, ip FROM crm.people ORDER BY id';
    const { columns, chunks } = await app.queries.stream({ sql, caller: viewer, purpose: 'export' });
    const streamed: unknown[][] = [];
    for await (const rows of chunks) streamed.push(...rows);
    const { expected } = await bothWays(sql);
    assert.deepEqual(columns, expected.columns);
    assert.deepEqual(streamed, expected.rows);
  });

  describe('its checks', () => {
    let enforcer: MaskingEnforcer;
    const errors: string[] = [];
    before(async () => {
      const catalog = new MethodCatalog();
      const store = new PolicyStore(() => app.db, catalog);
      await store.load();
      const log = { info() {}, warn() {}, debug() {}, error: (m: string) => void errors.push(m) };
      enforcer = new MaskingEnforcer({ db: app.db, clock: app.clock }, catalog, store, () => ({ enforceWithoutAuth: false }), log);
    });

    async function planned(sql: string, runsRowTransforms: boolean) {
      const q: QueryContext = { sql, originalSql: sql, caller: viewer, purpose: 'query', rowTransforms: [], runsRowTransforms, notes: [], state: {} };
      const before = enforcer.stats.result;
      await enforcer.beforeQuery(q);
      return { q, atResult: enforcer.stats.result > before };
    }

    it('is chosen only for a run that applies row transforms', async () => {
      const sql = 'SELECT id, email FROM crm.people ORDER BY id';
      const run = await planned(sql, true);
      assert.ok(run.atResult);
      assert.equal(run.q.sql, sql);
      assert.equal(run.q.rowTransforms.length, 1);
      const prepared = await planned(sql, false);
      assert.ok(!prepared.atResult);
      assert.notEqual(prepared.q.sql, sql);
      assert.equal(prepared.q.rowTransforms.length, 0);
    });

    it('refuses a final text that selects other columns than planned, and a result that does not match', async () => {
      const { q } = await planned('SELECT id, email FROM crm.people ORDER BY id', true);
      const tree = async (sql: string) => {
        const p = await app.db.parse(sql);
        assert.ok(p.ok);
        return p.tree;
      };
      // The runner's page appended: the same plan.
      q.finalChecks![0](await tree('SELECT id, email FROM crm.people ORDER BY id\nLIMIT 1001'));
      for (const other of ['SELECT email, id FROM crm.people ORDER BY id', 'SELECT id, email, phone FROM crm.people', 'SELECT id, email FROM crm.people ORDER BY email', 'SELECT id, name AS email FROM crm.people']) {
        const parsed = await tree(other);
        assert.throws(() => q.finalChecks![0](parsed), (e: any) => e.status === 500 && e.code === 'masking_unverified', other);
      }
      const mask = q.rowTransforms[0];
      assert.deepEqual(mask(['id', 'email'], [[1, 'ada@example.com']]), [[1, '***@example.com']]);
      assert.throws(() => mask(['id', 'email', 'x'], [[1, 'a@b', 1]]), (e: any) => e.code === 'masking_unverified');
      assert.throws(() => mask(['id', 'email'], [[1, 42]]), (e: any) => e.code === 'masking_unverified');
      assert.ok(errors.length >= 3);
    });
  });
});
