/**
 * The rewrite's text paths: the lexer that finds where a table reference ends, the splice of
 * wrappers into the original text (byte offsets, quoted and odd identifiers, comments between
 * name parts, text before the reference that is not ASCII), the json_deserialize_sql path
 * for syntax the splice does not take, the check of the final SQL's parse, and the lossless
 * tree JSON the deparse path relies on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { MethodCatalog } from '../../../plugins/masking/catalog.js';
import { MaskingEnforcer } from '../../../plugins/masking/enforce.js';
import { PolicyStore } from '../../../plugins/masking/policies.js';
import { lexTableName, namesMatch } from '../../../plugins/masking/splice.js';
import { type Caller, type QueryContext, readTreeJson, writeTreeJson } from '../../../sdk/index.js';
import { bootApp, makeProject } from '../../helpers.js';

const viewer: Caller = { username: 'v', role: 'viewer', authenticated: true };
const admin: Caller = { username: 'a', role: 'admin', authenticated: true };

function lex(text: string, at = 0) {
  const out = lexTableName(Buffer.from(text, 'utf8'), at);
  return out && { parts: out.parts.map((p) => (p.quoted ? `"${p.name}"` : p.name)), rest: Buffer.from(text, 'utf8').subarray(out.end).toString('utf8') };
}

describe('masking splice: lexing a table reference', () => {
  it('reads dotted names with quotes, escapes, spaces and comments between the parts', () => {
    assert.deepEqual(lex('crm.customers c'), { parts: ['crm', 'customers'], rest: ' c' });
    assert.deepEqual(lex('crm . "Cust ""x"" ü" AS c'), { parts: ['crm', '"Cust "x" ü"'], rest: ' AS c' });
    assert.deepEqual(lex('db/* a /* nested */ b */./*y*/crm\n.\tcustomers)'), { parts: ['db', 'crm', 'customers'], rest: ')' });
    assert.deepEqual(lex('crm -- to the end of the line\n.customers WHERE'), { parts: ['crm', 'customers'], rest: ' WHERE' });
    assert.deepEqual(lex('ümlaut.t$1,'), { parts: ['ümlaut', 't$1'], rest: ',' });
    // A comment after the last part is not part of the name.
    assert.deepEqual(lex('customers /* c */ x'), { parts: ['customers'], rest: ' /* c */ x' });
  });

  it('gives up on anything that is not a name of one to three parts', () => {
    for (const bad of ['"unterminated', '""', '1abc', 'a.b.c.d', 'crm./* open', "'crm'.t", 'crm.', '(crm.t)']) assert.equal(lex(bad), null, bad);
  });

  it('matches the names DuckDB parsed: unquoted parts case-insensitively, quoted ones exactly', () => {
    const node = { catalog_name: '', schema_name: 'CRM', table_name: 'Customers' };
    const parts = (text: string) => lexTableName(Buffer.from(text), 0)!.parts;
    assert.equal(namesMatch(parts('crm.customers'), node), true);
    assert.equal(namesMatch(parts('"CRM"."Customers"'), node), true);
    assert.equal(namesMatch(parts('"crm"."customers"'), node), false);
    assert.equal(namesMatch(parts('customers'), node), false);
    assert.equal(namesMatch(parts('x.crm.customers'), node), false);
    assert.equal(namesMatch(parts('x.crm.customers'), { ...node, catalog_name: 'X' }), true);
  });
});

describe('lossless tree JSON', () => {
  it('writes back UINT64 locations, DOUBLE constants and big integers exactly as DuckDB wrote them', () => {
    const text = '{"query_location":18446744073709551615,"value":{"type":{"id":"DOUBLE"},"value":10.0},"big":9007199254740993,"small":42,"neg":-1.5e-7,"s":"9.0"}';
    const tree = readTreeJson(text);
    assert.equal(tree.small, 42);
    assert.equal(tree.s, '9.0');
    assert.equal(writeTreeJson(tree), text);
    // Plain JSON.parse output is written as JSON.stringify writes it.
    assert.equal(writeTreeJson(JSON.parse('{"a":[1,"x",null]}')), '{"a":[1,"x",null]}');
  });

  it('never turns a string of the SQL into a number or into JSON structure', () => {
    for (const s of ['\u0001dpnum:1', '\u0001dpnum:1}],"x":{"y":[1', `\u0001dpnum:${'0'.repeat(24)}:7`]) {
      const text = JSON.stringify({ value: s, n: 1.5 });
      const tree = readTreeJson(text);
      assert.equal(tree.value, s);
      assert.deepEqual(JSON.parse(writeTreeJson(tree)), { value: s, n: 1.5 });
    }
  });
});

describe('masking rewrite paths (real DuckDB)', () => {
  let app: App;
  let enforcer: MaskingEnforcer;
  let store: PolicyStore;
  const errors: string[] = [];

  /** Creates a policy through the app's own POST route (any schema or table name), then reloads this enforcer's copy. */
  async function addPolicy(body: Record<string, unknown>) {
    const route = app.routes.find((r) => r.method === 'POST' && r.url === '/api/masking/policies')!;
    await route.handler({ body, params: {}, query: {}, caller: admin, headers: {}, ip: '', raw: null as never }, { code() {} } as never);
    await store.load();
  }

  before(async () => {
    app = await bootApp(makeProject());
    await app.db.run(`CREATE SCHEMA crm;
      CREATE TABLE crm.customers (id INTEGER, name VARCHAR, email VARCHAR);
      INSERT INTO crm.customers VALUES (1, 'Ada Lovelace', 'ada@example.com'), (2, 'Alan Turing', 'alan@example.org');
      CREATE SCHEMA "Odd ""S""";
      CREATE TABLE "Odd ""S"""."tbl ü" (id INTEGER, email VARCHAR);
      INSERT INTO "Odd ""S"""."tbl ü" VALUES (1, 'grace@navy.mil');`);
    for (const [schema, table, column, method] of [
      ['crm', 'customers', 'email', 'email'],
      ['crm', 'customers', 'name', 'first_initial'],
    ]) {
      await app.queries.run({ sql: `CREATE MASKING POLICY ON ${schema}.${table}.${column} METHOD ${method}`, caller: admin, purpose: 'query' });
    }
    const catalog = new MethodCatalog();
    store = new PolicyStore(() => app.db, catalog);
    await store.load();
    const log = { info() {}, warn() {}, debug() {}, error: (m: string) => void errors.push(m) };
    enforcer = new MaskingEnforcer({ db: app.db, clock: app.clock }, catalog, store, () => ({ enforceWithoutAuth: false }), log);
  });
  after(async () => app.close());

  async function rewrite(sql: string) {
    const q: QueryContext = { sql, originalSql: sql, caller: viewer, purpose: 'query', rowTransforms: [], notes: [], state: {} };
    const before = { ...enforcer.stats };
    await enforcer.beforeQuery(q);
    const path =
      enforcer.stats.late > before.late ? 'late' : enforcer.stats.spliced > before.spliced ? 'spliced' : enforcer.stats.deparsed > before.deparsed ? 'deparsed' : 'none';
    return { q, path };
  }

  const rows = async (sql: string) => (await app.queries.run({ sql, caller: viewer, purpose: 'query' })).rows;
  /** DuckDB's parse of SQL that must parse. */
  const parsed = async (sql: string) => {
    const p = await app.db.parse(sql);
    assert.ok(p.ok);
    return p.tree;
  };

  it('splices into the original text, keeping comments, spacing, aliases and text before the reference that is not ASCII', async () => {
    const sql = "SELECT 'ünïcode ✓' AS u, c.email /* keep */ FROM /* a */ crm . /* b */ customers c(i, n, email) WHERE c.i > 0";
    const { q, path } = await rewrite(sql);
    assert.equal(path, 'spliced');
    assert.ok(q.sql.startsWith("SELECT 'ünïcode ✓' AS u, c.email /* keep */ FROM /* a */ (SELECT * REPLACE ("), q.sql);
    assert.ok(q.sql.endsWith(') FROM crm . /* b */ customers) c(i, n, email) WHERE c.i > 0'), q.sql);
    assert.equal(q.finalChecks?.length, 1);
    assert.deepEqual(await rows(sql), [
      ['ünïcode ✓', '***@example.com'],
      ['ünïcode ✓', '***@example.org'],
    ]);
  });

  it('names an unaliased wrapper after the table, so table-qualified columns still bind', async () => {
    // The unqualified `id` keeps the statement off the late path.
    const sql = 'SELECT customers.name, id FROM crm.customers -- trailing comment';
    const { q, path } = await rewrite(sql);
    assert.equal(path, 'spliced');
    assert.match(q.sql, /FROM crm\.customers\) AS "customers" -- trailing comment$/);
    assert.deepEqual(await rows(sql), [
      ['A.L.', 1],
      ['A.T.', 2],
    ]);
  });

  it('splices quoted identifiers with escaped quotes and non-ASCII letters', async () => {
    await addPolicy({ schema_name: 'Odd "S"', table_name: 'tbl ü', column_name: 'email', method: 'redact' });
    const sql = 'SELECT t.email, id FROM "Odd ""S""" . /*x*/ "tbl ü" AS t';
    const { path } = await rewrite(sql);
    assert.equal(path, 'spliced');
    assert.deepEqual(await rows(sql), [['***', 1]]);
    const late = 'SELECT "T" . /* c */ "email", t.id FROM "Odd ""S""" . "tbl ü" AS t';
    assert.equal((await rewrite(late)).path, 'late');
    assert.deepEqual(await rows(late), [['***', 1]]);
  });

  it('deparses a tree for syntax the splice does not take, with the same masks', async () => {
    for (const sql of [
      'SELECT email FROM crm.customers TABLESAMPLE 100%',
      'SUMMARIZE crm.customers',
      'SELECT crm.customers.email FROM crm.customers',
    ]) {
      const { q, path } = await rewrite(sql);
      assert.equal(path, 'deparsed', sql);
      assert.equal(q.finalChecks?.length, 1);
      const out = await rows(sql);
      assert.ok(!JSON.stringify(out).includes('ada@'), `${sql}: ${JSON.stringify(out)}`);
      assert.ok(JSON.stringify(out).includes('***@example.com'), `${sql}: ${JSON.stringify(out)}`);
    }
  });

  it('refuses to run SQL whose parse does not mask what the plan masked', async () => {
    const { q } = await rewrite('SELECT email FROM crm.customers');
    const check = q.finalChecks![0];
    for (const [sql, problem] of [
      ['SELECT email FROM crm.customers', /is not wrapped/],
      ['SELECT email FROM (SELECT * REPLACE (email AS email) FROM crm.customers) AS customers', /name, email|email, name|masks/],
      ['SELECT email FROM (SELECT * REPLACE (email AS email, "name" AS "name") FROM crm.customers) AS customers', /not the policy's expression/],
      ["SELECT email FROM (SELECT * REPLACE ('x' AS email, 'y' AS \"name\") FROM crm.customers WHERE email LIKE 'a%') AS customers", /is not wrapped/],
    ] as const) {
      const tree = await parsed(sql);
      assert.throws(
        () => check(tree),
        (e: any) => e.status === 500 && e.code === 'masking_unverified' && problem.test(e.message),
        sql,
      );
    }
    assert.ok(errors.some((m) => /does not mask as planned/.test(m)));
    // The rewrite's own text passes, and a second check of the same parse is free.
    const own = await parsed(q.sql);
    check(own);
    check(own);
  });

  it('masks late in a plain SELECT whose columns all name their table, keeping the result names', async () => {
    const sql = 'SELECT c.email, c.name AS n, upper(c.email) AS u, c.id FROM crm.customers c JOIN crm.customers d ON d.id = c.id ORDER BY c.id LIMIT 5';
    const { q, path } = await rewrite(sql);
    assert.equal(path, 'late');
    assert.ok(q.sql.startsWith('SELECT (CASE WHEN "c"."email" IS NULL'), q.sql);
    assert.match(q.sql, /END\) AS "email", \([^,]*CAST\("c"\."name" AS VARCHAR\)/);
    assert.match(q.sql, /\) AS n, upper\(\(CASE WHEN "c"\."email"/);
    assert.ok(q.sql.endsWith(' AS u, c.id FROM crm.customers c JOIN crm.customers d ON d.id = c.id ORDER BY c.id LIMIT 5'), q.sql);
    const r = await app.queries.run({ sql, caller: viewer, purpose: 'query' });
    assert.deepEqual(r.columns, ['email', 'n', 'u', 'id']);
    assert.deepEqual(r.rows, [
      ['***@example.com', 'A.L.', '***@EXAMPLE.COM', 1],
      ['***@example.org', 'A.T.', '***@EXAMPLE.ORG', 2],
    ]);
  });

  it('wraps the scans when a statement is not a plain SELECT with qualified columns', async () => {
    for (const sql of [
      'SELECT email FROM crm.customers c',
      'SELECT c.* FROM crm.customers c',
      'SELECT to_json(c) FROM crm.customers c',
      'SELECT c.email, (SELECT 1) AS one FROM crm.customers c',
      'SELECT list_transform([c.email], x -> x) AS l FROM crm.customers c',
      'WITH x AS (SELECT 1) SELECT c.email FROM crm.customers c',
      'SELECT c.email FROM crm.customers c NATURAL JOIN crm.customers d',
      'SELECT c.email, r.range FROM crm.customers c, range(1) r',
      'SELECT #3 FROM crm.customers c',
      'SELECT c.email FROM crm.customers c(i, n, email)',
    ]) {
      const { path } = await rewrite(sql);
      assert.ok(path === 'spliced' || path === 'deparsed', `${sql}: ${path}`);
      const out = JSON.stringify(await rows(sql));
      assert.ok(!out.includes('ada@') && out.includes('***@example.com'), `${sql}: ${out}`);
    }
  });

  it('the final check of a late rewrite refuses SQL that reads a masked column other than through its mask', async () => {
    const { q } = await rewrite('SELECT c.email FROM crm.customers c');
    const check = q.finalChecks![0];
    for (const [sql, problem] of [
      ['SELECT c.email FROM crm.customers c', /c\.email is read without its mask/],
      ['SELECT upper(c.email) FROM crm.customers c', /c\.email is read without its mask/],
      ['SELECT c.id, email FROM crm.customers c', /without its table/],
      ['SELECT c.* FROM crm.customers c', /star/],
      ['SELECT (SELECT max(email) FROM crm.customers) AS m FROM crm.customers c', /subquery/],
      ['SELECT x.email FROM (SELECT * FROM crm.customers) x', /not a plain SELECT/],
    ] as const) {
      const tree = await parsed(sql);
      assert.throws(
        () => check(tree),
        (e: any) => e.status === 500 && e.code === 'masking_unverified' && problem.test(e.message),
        sql,
      );
    }
    check(await parsed(q.sql));
  });

  it('a plain SELECT that reads no masked column is left as it is, and still checked', async () => {
    const sql = 'SELECT c.id FROM crm.customers c ORDER BY c.id';
    const { q, path } = await rewrite(sql);
    assert.equal(path, 'late');
    assert.equal(q.sql, sql);
    assert.equal(q.finalChecks?.length, 1);
    const p = await app.db.parse(sql);
    assert.ok(p.ok);
    q.finalChecks![0](p.tree);
    const raw = await app.db.parse('SELECT c.email FROM crm.customers c');
    assert.ok(raw.ok);
    assert.throws(() => q.finalChecks![0](raw.tree), (e: any) => e.code === 'masking_unverified');
    assert.deepEqual(await rows(sql), [[1], [2]]);
  });

  it('every method passes the final check on every path', async () => {
    await app.db.run(`CREATE TABLE crm.every AS SELECT 'ada@example.com' AS c_hash, 'x' AS c_redact, 'x' AS c_null, 'abcdef' AS c_partial,
      'abcdef' AS c_truncate, 'ada@example.com' AS c_email, '555-123-4567' AS c_phone, 'Ada Lovelace' AS c_first_initial, '10.1.2.3' AS c_ip_address,
      '4111-1111-1111-1111' AS c_credit_card, 52347 AS c_range, 1234.5::DOUBLE AS c_noise, DATE '2024-01-05' AS c_date_shift, 'ada' AS c_consistent_hash`);
    const methods: Array<[string, Record<string, unknown>]> = [
      ['hash', {}],
      ['redact', {}],
      ['null', {}],
      ['partial', { show_first: 1, show_last: 2 }],
      ['truncate', {}],
      ['email', {}],
      ['phone', {}],
      ['first_initial', {}],
      ['ip_address', {}],
      ['credit_card', {}],
      ['range', { bucket_size: 2.5 }],
      ['noise', { seed_key: 's', percentage: 12.5 }],
      ['date_shift', { seed_key: 's' }],
      ['consistent_hash', { prefix: 'p_' }],
    ];
    for (const [method, method_config] of methods) await addPolicy({ schema_name: 'crm', table_name: 'every', column_name: `c_${method}`, method, method_config });
    const spliced = await rows('SELECT * FROM crm.every');
    const deparsed = await rows('SELECT * FROM crm.every TABLESAMPLE 100%');
    assert.deepEqual(deparsed, spliced);
    const qualified = `SELECT ${methods.map(([m]) => `e.c_${m}`).join(', ')} FROM crm.every e`;
    assert.equal((await rewrite(qualified)).path, 'late');
    assert.deepEqual(await rows(qualified), spliced);
    const raw = (await app.queries.run({ sql: 'SELECT * FROM crm.every', caller: admin, purpose: 'query' })).rows;
    spliced[0].forEach((v, i) => assert.notDeepEqual(v, raw[0][i], `column ${i} is masked`));
    assert.equal((await rewrite('SELECT * FROM crm.every')).path, 'spliced');
    assert.equal((await rewrite('SELECT * FROM crm.every TABLESAMPLE 100%')).path, 'deparsed');
  });
});
