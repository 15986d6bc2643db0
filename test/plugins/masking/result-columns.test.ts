/**
 * `masked_columns` of the query response: which result columns the server masked, as the masking
 * rewrite that ran planned them, through aliases, CTEs, subqueries, views, derived (lineage)
 * policies, joins, set operations and `SELECT *`; as a bound viewer and as the exempt admin; on
 * the CSV export's header. And the `details.line` / `details.column` of SQL errors.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

const PEOPLE = `id,email,name,salary,dept
1,ada@example.com,Ada,120,eng
2,alan@example.org,Alan,90,ops
`;

const MODELS: Record<string, string> = {
  // A model renaming a masked column: its column is masked through a derived policy.
  'transform/m/renamed.sql': '-- @config materialized=table, schema=m\nSELECT id, email AS contact, upper(name) AS shout FROM seeds.people\n',
  'transform/m/plain_view.sql': '-- @config materialized=view, schema=m\nSELECT id, email AS view_mail, dept FROM seeds.people\n',
};

type Role = 'viewer' | 'admin';
type Marked = { index: number; name: string; method: string; via: string; policy?: string; source?: string; derived?: boolean };

describe('masked_columns in the query response', () => {
  let s: TestServer;
  const tokens = {} as Record<Role, string>;

  const query = async (role: Role, sql: string, extra: Record<string, unknown> = {}) => {
    const r = await s.request('POST', '/api/query', { sql, ...extra }, { token: tokens[role] });
    assert.equal(r.status, 200, `${sql}: ${r.text.slice(0, 300)}`);
    return r.body as { columns: string[]; rows: unknown[][]; masked_columns: Marked[] };
  };
  /** `name:method:via` of each masked column, in result order. */
  const marks = async (role: Role, sql: string) => (await query(role, sql)).masked_columns.map((m) => `${m.name}@${m.index}:${m.method}:${m.via}`);

  before(async () => {
    const root = makeProject({ 'seeds/people.csv': PEOPLE, ...MODELS });
    s = await startServer(root, { auth: true });
    const setup = await s.request('POST', '/api/auth/setup', { username: 'root', password: 'rootpw', role: 'admin' });
    tokens.admin = setup.body.token;
    await s.request('POST', '/api/users', { username: 'v', password: 'viewerpw', role: 'viewer' }, { token: tokens.admin });
    tokens.viewer = (await s.request('POST', '/api/auth/login', { username: 'v', password: 'viewerpw' })).body.token;
    for (const [column, method] of [['email', 'partial'], ['salary', 'range']] as const) {
      const r = await s.request('POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: column, method }, { token: tokens.admin });
      assert.equal(r.status, 201, r.text);
    }
    const models = s.app.services.get<any>('models');
    await models.loadSeeds({});
    await models.transform({});
  });
  after(async () => s?.close());

  const CASES: Array<{ case: string; sql: string; viewer: string[] }> = [
    { case: 'a masked column by its own name', sql: 'SELECT id, email FROM seeds.people', viewer: ['email@1:partial:column'] },
    { case: 'an alias', sql: 'SELECT email AS contact_address, name FROM seeds.people', viewer: ['contact_address@0:partial:column'] },
    { case: 'a qualified reference under a table alias', sql: 'SELECT p.id, p.salary AS pay FROM seeds.people p', viewer: ['pay@1:range:column'] },
    { case: 'a cast keeps the value', sql: 'SELECT CAST(email AS VARCHAR) AS e FROM seeds.people', viewer: ['e@0:partial:column'] },
    { case: 'a function of a masked column', sql: 'SELECT upper(email), id FROM seeds.people', viewer: ['upper(email)@0:partial:expression'] },
    { case: 'counts reveal no value', sql: 'SELECT count(*) AS n, count(email) AS ne, count(DISTINCT email) AS nd FROM seeds.people', viewer: ['nd@2:partial:expression'] },
    {
      case: 'SELECT * (positions follow the table)',
      sql: 'SELECT * FROM seeds.people',
      viewer: ['email@1:partial:column', 'salary@3:range:column'],
    },
    { case: 'SELECT * EXCLUDE / RENAME', sql: 'SELECT * EXCLUDE (id) RENAME (email AS mail) FROM seeds.people', viewer: ['mail@0:partial:column', 'salary@2:range:column'] },
    {
      case: 'a CTE chain of renames',
      sql: 'WITH a AS (SELECT id, email AS e FROM seeds.people), b AS (SELECT e AS f, id FROM a) SELECT id, f FROM b',
      viewer: ['f@1:partial:column'],
    },
    { case: 'a subquery with column aliases', sql: 'SELECT * FROM (SELECT id, email FROM seeds.people) AS t(k, v)', viewer: ['v@1:partial:column'] },
    {
      case: 'a join',
      sql: 'SELECT a.name, b.email AS other FROM seeds.people a JOIN seeds.people b ON a.id = b.id',
      viewer: ['other@1:partial:column'],
    },
    { case: 'a UNION of masked and unmasked', sql: 'SELECT name AS v FROM seeds.people UNION ALL SELECT email FROM seeds.people', viewer: ['v@0:partial:column'] },
    { case: 'a scalar subquery over a masked column', sql: 'SELECT id, (SELECT max(email) FROM seeds.people) AS top FROM seeds.people', viewer: ['top@1:partial:expression'] },
    { case: 'a view renaming a masked column', sql: 'SELECT dept, view_mail FROM m.plain_view', viewer: ['view_mail@1:partial:column'] },
    {
      case: 'a recursive CTE',
      sql: 'WITH RECURSIVE r(n, e) AS (SELECT 1, email FROM seeds.people WHERE id = 1 UNION ALL SELECT n + 1, e FROM r WHERE n < 3) SELECT n, e FROM r',
      viewer: ['e@1:partial:column'],
    },
    { case: 'the same column twice (marked by position)', sql: 'SELECT email, name, email FROM seeds.people', viewer: ['email@0:partial:column', 'email@2:partial:column'] },
    { case: 'nothing masked', sql: 'SELECT id, name, dept FROM seeds.people', viewer: [] },
  ];

  for (const c of CASES) {
    it(`${c.case}: marked for the viewer, nothing for the exempt admin`, async () => {
      assert.deepEqual(await marks('viewer', c.sql), c.viewer);
      assert.deepEqual(await marks('admin', c.sql), []);
    });
  }

  it('a column masked through a derived (lineage) policy names that policy and its source', async () => {
    const r = await query('viewer', 'SELECT * FROM m.renamed');
    assert.deepEqual(r.columns, ['id', 'contact', 'shout']);
    const contact = r.masked_columns.find((m) => m.name === 'contact');
    assert.ok(contact, JSON.stringify(r.masked_columns));
    assert.equal(contact.index, 1);
    assert.equal(contact.method, 'partial');
    assert.equal(contact.derived, true);
    assert.equal(contact.policy, 'derived:m.renamed.contact');
    assert.equal(contact.source, 'seeds.people.email');
    // The value is indeed masked, and what is not marked is not masked.
    assert.ok(!JSON.stringify(r.rows).includes('ada@example.com'));
    assert.equal(r.masked_columns.some((m) => m.name === 'shout'), false);
    assert.deepEqual(await marks('admin', 'SELECT * FROM m.renamed'), []);
  });

  it('is the same on a later page and on a cached repeat', async () => {
    const sql = 'SELECT id, email AS e FROM seeds.people ORDER BY id';
    const first = await query('viewer', sql, { limit: 1 });
    const second = await query('viewer', sql, { limit: 1, offset: 1 });
    const again = await query('viewer', sql, { limit: 1 });
    for (const r of [first, second, again]) assert.deepEqual(r.masked_columns.map((m) => m.name), ['e']);
  });

  it('the CSV export names the masked columns in its x-dp-masked-columns header', async () => {
    const viewer = await s.request('POST', '/api/query/export-csv', { sql: 'SELECT id, email AS contact FROM seeds.people' }, { token: tokens.viewer });
    assert.equal(viewer.status, 200);
    const header = JSON.parse(String(viewer.headers.get('x-dp-masked-columns'))) as Marked[];
    assert.deepEqual(header.map((m) => [m.index, m.name, m.method]), [[1, 'contact', 'partial']]);
    const admin = await s.request('POST', '/api/query/export-csv', { sql: 'SELECT id, email AS contact FROM seeds.people' }, { token: tokens.admin });
    assert.deepEqual(JSON.parse(String(admin.headers.get('x-dp-masked-columns'))), []);
  });
});

describe('SQL errors carry their line', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'seeds/people.csv': PEOPLE }));
    await s.app.services.get<any>('models').loadSeeds({});
  });
  after(async () => s?.close());

  const error = async (sql: string) => {
    const r = await s.request('POST', '/api/query', { sql });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'sql_error');
    assert.ok(!/LINE \d/.test(r.body.error.message), 'the message stays one line');
    return r.body.error.details as { line?: number; column?: number; kind: string };
  };

  it('a syntax error on line 3 (parser): line and column', async () => {
    const d = await error('SELECT id,\n  name\nFORM seeds.people');
    assert.deepEqual([d.line, d.column], [3, 6]);
  });

  it('an unknown column on line 2 (binder): line and column', async () => {
    const d = await error('SELECT id,\n   nope\nFROM seeds.people');
    assert.equal(d.kind, 'binder');
    assert.deepEqual([d.line, d.column], [2, 4]);
  });

  it('a type error on line 4: line', async () => {
    const d = await error("SELECT id\nFROM seeds.people\nWHERE\n  id = 'x'::INTEGER + 1");
    assert.equal(d.line, 4);
  });

  it('the line of the text as sent, on the paged (and masked) text too', async () => {
    const d = await error('SELECT id,\n  name,\n  upper(id)\nFROM seeds.people');
    assert.equal(d.line, 3);
    const paged = await s.request('POST', '/api/query', { sql: 'SELECT id,\n  name,\n  upper(id)\nFROM seeds.people', offset: 5 });
    assert.equal(paged.body.error.details.line, 3);
  });
});

describe('SQL errors carry their line on explain', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'seeds/people.csv': PEOPLE }));
    await s.app.services.get<any>('models').loadSeeds({});
  });
  after(async () => s?.close());

  it('locates a binder error of the explained SQL in the text as sent', async () => {
    const one = await s.request('POST', '/api/query/explain', { sql: 'SELECT nope FROM seeds.people' });
    assert.equal(one.status, 400, one.text);
    assert.deepEqual([one.body.error.details.line, one.body.error.details.column], [1, 8]);
    const two = await s.request('POST', '/api/query/explain', { sql: 'SELECT id,\n  nope\nFROM seeds.people' });
    assert.deepEqual([two.body.error.details.line, two.body.error.details.column], [2, 3]);
  });
});
