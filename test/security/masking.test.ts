/**
 * Security classes of the masking plugin (issue 10 points 3, 4, 8, 9, 12; issue 22's catalog
 * race), as table-driven cases across roles (viewer, editor: bound by the policies; admin:
 * exempt) and routes (/api/query, /api/query/explain, /api/query/export-csv, table samples and
 * profiles). A real server on 127.0.0.1 with --auth and a real DuckDB file.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Caller } from '../../sdk/index.js';
import { FakeClock } from '../kernel/fake-clock.js';
import { makeProject } from '../helpers.js';
import { startServerWithRoles, type Role, type RoleServer } from '../support/role-server.js';

const ROLES: Role[] = ['viewer', 'editor', 'admin'];
const BOUND: Role[] = ['viewer', 'editor'];

const EMAILS = ['ada@example.com', 'alan@example.org', 'grace@navy.mil', 'ada@example.com'];
const CODES = ['A1', 'B2', 'C3', 'D4'];

async function policy(srv: RoleServer, body: Record<string, unknown>): Promise<string> {
  const r = await srv.s.request('POST', '/api/masking/policies', body, { token: srv.tokens.admin });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

/** Runs SQL on each query route; returns [route, response] pairs. */
async function everyRoute(srv: RoleServer, role: Role, sql: string) {
  const out: Array<[string, { status: number; text: string; body: any }]> = [];
  for (const route of ['/api/query', '/api/query/explain', '/api/query/export-csv']) {
    out.push([route, await srv.s.request('POST', route, { sql }, { token: srv.tokens[role] })]);
  }
  return out;
}

describe('security: masking', () => {
  let srv: RoleServer;
  /** Every piece of key material: the .env key, the padded keys in the key table, the seed_keys. */
  let keyMaterial: string[] = [];

  before(async () => {
    const root = makeProject({ '.env': 'OTHER=1\n' });
    srv = await startServerWithRoles(root);
    await srv.s.app.db.run(`CREATE SCHEMA sec;
      CREATE TABLE sec.people (id INTEGER, email VARCHAR, code VARCHAR, salary INTEGER, born DATE, tier VARCHAR, note VARCHAR, ssn VARCHAR);
      INSERT INTO sec.people VALUES
        (1, 'ada@example.com', 'A1', 52347, DATE '1815-12-10', 'vip', 'vip secret one', '123-45-6789'),
        (2, 'alan@example.org', 'B2', 61234, DATE '1912-06-23', 'std', 'plain note', '987-65-4321'),
        (3, 'grace@navy.mil', 'C3', 78901, DATE '1906-12-09', 'vip', 'vip secret two', '555-12-3456'),
        (4, 'ada@example.com', 'D4', 0, DATE '2000-02-29', 'std', 'other note', '000-00-0000');
      CREATE TABLE sec.orders (order_id INTEGER, email VARCHAR);
      INSERT INTO sec.orders VALUES (10, 'ada@example.com'), (11, 'grace@navy.mil');`);
    await policy(srv, { schema_name: 'sec', table_name: 'people', column_name: 'email', method: 'consistent_hash' });
    await policy(srv, { schema_name: 'sec', table_name: 'people', column_name: 'code', method: 'hash' });
    await policy(srv, { schema_name: 'sec', table_name: 'people', column_name: 'salary', method: 'noise', method_config: { seed_key: 'seedsecret-noise' } });
    await policy(srv, { schema_name: 'sec', table_name: 'people', column_name: 'born', method: 'date_shift', method_config: { seed_key: 'seedsecret-shift', max_days: 30 } });
    await policy(srv, { schema_name: 'sec', table_name: 'people', column_name: 'note', method: 'redact', condition_column: 'tier', condition_value: 'vip' });
    await policy(srv, { schema_name: 'sec', table_name: 'people', column_name: 'ssn', method: 'redact' });
    await policy(srv, { schema_name: 'sec', table_name: 'orders', column_name: 'email', method: 'consistent_hash' });
    // One masked query writes the project key to .env and the padded keys to their table.
    const first = await srv.s.request('POST', '/api/query', { sql: 'SELECT * FROM sec.people' }, { token: srv.tokens.viewer });
    assert.equal(first.status, 200, first.text);
    const env = fs.readFileSync(path.join(root, '.env'), 'utf8');
    const key = /^DP_MASKING_KEY=([0-9a-f]{64})$/m.exec(env)?.[1];
    assert.ok(key, `the project key is generated once and kept in .env: ${env}`);
    assert.ok(env.includes('OTHER=1'), 'other .env lines stay');
    const pads = await srv.s.app.db.all<{ i: string; o: string }>('SELECT hex(inner_pad) AS i, hex(outer_pad) AS o FROM _masking.keys');
    assert.ok(pads.length >= 3, 'one padded key per keyed use');
    keyMaterial = [key, ...pads.flatMap((p) => [p.i, p.o]), 'seedsecret-noise', 'seedsecret-shift'];
    // Slices of the key in hex too (a substring of 16 hex digits is enough to count as a leak).
    keyMaterial.push(...[key, ...pads.map((p) => p.i)].map((k) => k.slice(8, 24)));
  });
  after(async () => srv.s.close());

  const leakedKey = (text: string) => {
    const lower = text.toLowerCase();
    return keyMaterial.find((k) => lower.includes(k.toLowerCase()));
  };

  // ---------------------------------------------------------------- point 3: no key material anywhere readable
  const READABLE: Array<{ name: string; sql: string }> = [
    { name: 'masked rows and current_query()', sql: 'SELECT *, current_query() AS q FROM sec.people' },
    { name: 'late path and current_query()', sql: 'SELECT p.email, p.salary, p.born, current_query() AS q FROM sec.people p' },
    { name: 'an error inside the masked query', sql: 'SELECT CAST(email AS INTEGER) FROM sec.people' },
    { name: 'duckdb_functions()', sql: 'SELECT * FROM duckdb_functions()' },
    { name: 'duckdb_variables()', sql: 'SELECT * FROM duckdb_variables()' },
    { name: 'duckdb_settings()', sql: 'SELECT * FROM duckdb_settings()' },
    { name: 'duckdb_tables()/columns()/views()', sql: 'SELECT (SELECT list(t) FROM duckdb_tables() t), (SELECT list(c) FROM duckdb_columns() c), (SELECT list(v) FROM duckdb_views() v)' },
    { name: 'information_schema.columns', sql: 'SELECT * FROM information_schema.columns' },
    { name: 'pragma_table_info of the key table', sql: "SELECT * FROM pragma_table_info('_masking.keys')" },
  ];
  for (const role of ROLES) {
    for (const c of READABLE) {
      it(`point 3, ${role}: no key material through ${c.name} on any route`, async () => {
        for (const [route, r] of await everyRoute(srv, role, c.sql)) {
          assert.equal(leakedKey(r.text), undefined, `${route}: ${r.text.slice(0, 300)}`);
          assert.ok(r.status < 500, `${route}: ${r.text.slice(0, 300)}`);
        }
      });
    }
  }

  const KEY_TABLE_READS = [
    'SELECT * FROM _masking.keys',
    'SELECT hex(inner_pad) FROM "_MASKING"."KEYS"',
    'SELECT * FROM test._masking.keys',
    'WITH k AS (SELECT * FROM _masking.keys) SELECT * FROM k',
    'SELECT (SELECT max(hex(outer_pad)) FROM _masking.keys) AS x',
    'SELECT 1 WHERE EXISTS (SELECT 1 FROM _masking.keys WHERE inner_pad IS NOT NULL)',
    'SUMMARIZE _masking.keys',
    'SELECT stats(inner_pad) FROM _masking.keys',
    'SELECT * FROM sec.people p JOIN _masking.keys k ON true',
  ];
  for (const role of ROLES) {
    it(`point 3, ${role}: every statement naming the key table is refused on every route`, async () => {
      for (const sql of KEY_TABLE_READS) {
        for (const [route, r] of await everyRoute(srv, role, sql)) {
          assert.equal(leakedKey(r.text), undefined, `${sql} via ${route}: ${r.text.slice(0, 300)}`);
          assert.equal(r.status, 403, `${sql} via ${route}: ${r.text.slice(0, 300)}`);
        }
      }
      for (const route of ['/api/tables/_masking/keys/sample', '/api/tables/_masking/keys/profile', '/api/profiles/_masking.keys']) {
        const r = await srv.s.request('GET', route, undefined, { token: srv.tokens[role] });
        assert.equal(leakedKey(r.text), undefined, `${route}: ${r.text.slice(0, 300)}`);
        assert.ok(r.status !== 200 || !/[0-9a-f]{32}/i.test(r.text), `${route}: ${r.status} ${r.text.slice(0, 300)}`);
      }
    });
  }

  const KEY_TABLE_LISTINGS: Array<[string, number]> = [
    ['/api/tables', 200],
    ['/api/tables?schema=_masking', 200],
    ['/api/autocomplete', 200],
    ['/api/tables/_masking/keys', 404],
    ['/api/tables/_MASKING/keys', 404],
    ['/api/dag', 200],
    ['/api/dag/full', 200],
    ['/api/lineage', 200],
    ['/api/lineage/marts.key_reader', 200],
    ['/api/lineage/_masking.keys', 404],
    ['/api/impact/_masking.keys', 404],
  ];
  for (const role of ROLES) {
    it(`point 3, ${role}: the key table is in no listing, autocomplete or describe (like _service)`, async () => {
      const listed = await srv.s.request('POST', '/api/query', { sql: 'SELECT count(*) AS n FROM duckdb_tables() WHERE schema_name = \'_masking\'' }, { token: srv.tokens[role] });
      assert.equal(listed.status, 200, listed.text);
      assert.equal(Number(listed.body.rows[0][0]), 1, 'the key table exists, so the listings below could show it');
      // An editor's model that reads the key table (writers are trusted with raw data) puts it in the DAG and lineage.
      fs.mkdirSync(path.join(srv.root, 'transform', 'marts'), { recursive: true });
      fs.writeFileSync(path.join(srv.root, 'transform', 'marts', 'key_reader.sql'), 'SELECT k.id, 1 AS one FROM _masking.keys AS k\n');
      for (const [route, status] of KEY_TABLE_LISTINGS) {
        const r = await srv.s.request('GET', route, undefined, { token: srv.tokens[role] });
        assert.equal(r.status, status, `${route}: ${r.text.slice(0, 300)}`);
        if (status === 200) assert.doesNotMatch(r.text, /_masking|inner_pad|outer_pad/i, `${route}: ${r.text.slice(0, 300)}`);
      }
    });
  }

  // A table endpoint masks at least what /api/query masks for a SELECT * of the same relation:
  // a pass-through view (or a copy) of a masked table has no policy of its own, but its columns
  // carry the masked columns' names, and the ad-hoc query of the view masks them by name.
  const RAW_VALUES = ['ada@example.com', 'grace@navy.mil', '123-45-6789', '987-65-4321', '52347'];
  const VIEW_ROUTES = ['/api/tables/sec/people_view/sample', '/api/tables/sec/people_view/profile', '/api/tables/sec/people_copy/sample', '/api/tables/sec/people_copy/profile'];
  for (const role of ROLES) {
    it(`point 6, ${role}: samples and profiles of a view or copy of a masked table mask like /api/query does`, async () => {
      await srv.s.app.db.run(`CREATE OR REPLACE VIEW sec.people_view AS SELECT id, email, ssn, salary FROM sec.people;
        CREATE OR REPLACE TABLE sec.people_copy AS SELECT id, email, ssn, salary FROM sec.people`);
      const query = await srv.s.request('POST', '/api/query', { sql: 'SELECT * FROM sec.people_view' }, { token: srv.tokens[role] });
      assert.equal(query.status, 200, query.text);
      for (const route of VIEW_ROUTES) {
        const r = await srv.s.request('GET', route, undefined, { token: srv.tokens[role] });
        assert.equal(r.status, 200, `${route}: ${r.text.slice(0, 300)}`);
        const raw = RAW_VALUES.filter((v) => r.text.includes(v));
        if (BOUND.includes(role)) assert.deepEqual(raw, [], `${route}: ${r.text.slice(0, 400)}`);
        else assert.ok(raw.length > 0, `admin sees raw values on ${route}`);
        assert.equal(leakedKey(r.text), undefined, route);
      }
    });
  }

  it('point 3: the mask SQL spliced into a query names the key row, never a key', async () => {
    const viewer: Caller = { username: 'viewer', role: 'viewer', authenticated: true };
    for (const sql of ['SELECT * FROM sec.people', 'SELECT p.email, p.salary, p.born FROM sec.people p']) {
      const prepared = await srv.s.app.queries.prepare({ sql, caller: viewer, purpose: 'query' });
      assert.notEqual(prepared.sql, sql);
      assert.match(prepared.sql, /_masking\.keys/);
      assert.equal(leakedKey(prepared.sql), undefined, prepared.sql);
    }
    const explain = await srv.s.request('POST', '/api/query/explain', { sql: 'SELECT * FROM sec.people' }, { token: srv.tokens.viewer });
    assert.equal(explain.status, 200, explain.text);
    assert.equal(leakedKey(explain.text), undefined);
  });

  // ---------------------------------------------------------------- point 4: keyed masks resist a dictionary
  const sha8 = (v: string) => crypto.createHash('sha256').update(v).digest('hex').slice(0, 8);

  it('point 4: the dictionary attack of the issue no longer recovers consistent_hash values (viewer and editor)', async () => {
    const dictionary = `['ada@example.com', 'alan@example.org', 'grace@navy.mil', 'nobody@x.y']`;
    const attacks = [
      `SELECT list_filter(${dictionary}, c -> left(sha256(c), 8) = p.email) AS hit FROM sec.people p`,
      `SELECT list_filter(${dictionary}, c -> left(sha256(c), 8) = email) AS hit FROM sec.people`,
      `SELECT list_filter(${dictionary}, c -> position(left(sha256(c), 8) IN email) > 0) AS hit FROM sec.people`,
    ];
    for (const role of BOUND) {
      for (const sql of attacks) {
        const r = await srv.s.request('POST', '/api/query', { sql }, { token: srv.tokens[role] });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body.rows, r.body.rows.map(() => [[]]), `${role}: ${sql} → ${r.text}`);
      }
    }
  });

  it('point 4: noise and date_shift do not follow the unkeyed formula (a dictionary of candidates finds nothing)', async () => {
    const r = await srv.s.request('POST', '/api/query', { sql: 'SELECT p.id, p.salary, p.born FROM sec.people p ORDER BY p.id' }, { token: srv.tokens.viewer });
    assert.equal(r.status, 200, r.text);
    const raw = [52347, 61234, 78901, 0];
    // The old noise: unit = first 8 hex of sha256('<seed_key>:<value>'); with the seed unknown, try the default ''.
    for (const [i, row] of r.body.rows.entries()) {
      const unit = parseInt(sha8(`:${raw[i]}`), 16) / 4294967295;
      if (raw[i] !== 0) assert.notEqual(row[1], Math.round(raw[i] * (1 + 0.1 * (2 * unit - 1))), `noise of ${raw[i]}`);
      assert.notEqual(row[2], ['1815-12-10', '1912-06-23', '1906-12-09', '2000-02-29'][i]);
    }
  });

  it('point 4: hash keeps SPEC.md\'s definition (first 8 hex of SHA-256), documented as reversible', async () => {
    const r = await srv.s.request('POST', '/api/query', { sql: 'SELECT p.code FROM sec.people p ORDER BY p.id' }, { token: srv.tokens.viewer });
    assert.deepEqual(r.body.rows, CODES.map((c) => [sha8(c)]));
  });

  it('point 4: keyed masks stay deterministic and join-safe across tables and requests', async () => {
    const q = async (sql: string) => (await srv.s.request('POST', '/api/query', { sql }, { token: srv.tokens.viewer })).body.rows;
    const people = await q('SELECT p.email FROM sec.people p ORDER BY p.id');
    assert.deepEqual(await q('SELECT p.email FROM sec.people p ORDER BY p.id'), people);
    assert.equal(people[0][0], people[3][0], 'the same value gives the same pseudonym');
    assert.notEqual(people[0][0], people[1][0]);
    const orders = await q('SELECT o.email FROM sec.orders o ORDER BY o.order_id');
    assert.deepEqual(orders, [people[0], people[2]], 'the same value gives the same pseudonym in another table');
    // Joining on the pseudonyms (outside the predicate rules: both sides are already masked values).
    const joined = await q('SELECT count(*) FROM (SELECT email AS e FROM sec.people) a JOIN (SELECT email AS e FROM sec.orders) b USING (e)');
    assert.deepEqual(joined, [[3]]);
    const wrapped = await q('SELECT email, salary, born FROM sec.people ORDER BY id');
    const late = await q('SELECT p.email, p.salary, p.born FROM sec.people p ORDER BY p.id');
    assert.deepEqual(wrapped, late, 'both rewrite paths give the same masks');
  });

  // ---------------------------------------------------------------- point 8: statistics and conditional masks
  const STATISTICS = [
    'SELECT stats(note) FROM sec.people',
    'SELECT stats(p.salary) FROM sec.people p',
    'SELECT stats(x) FROM (SELECT note AS x FROM sec.people)',
    'SELECT STATS(email) FROM sec.people',
    'WITH t AS (SELECT * FROM sec.people) SELECT stats(born) FROM t',
  ];
  for (const role of ROLES) {
    it(`point 8, ${role}: statistics functions over masked columns are ${role === 'admin' ? 'allowed (exempt)' : 'refused'} on every route`, async () => {
      for (const sql of STATISTICS) {
        for (const [route, r] of await everyRoute(srv, role, sql)) {
          if (role === 'admin') assert.equal(r.status, 200, `${sql} via ${route}: ${r.text}`);
          else {
            assert.equal(r.status, 403, `${sql} via ${route}: ${r.text.slice(0, 300)}`);
            assert.equal(r.body.error.code, 'masked_column_statistics');
            assert.ok(!r.text.includes('vip secret'), r.text);
          }
        }
      }
    });
  }

  it('point 8: a conditional policy whose condition column is masked is refused (400), both ways round', async () => {
    const self = await srv.s.request('POST', '/api/masking/policies', { schema_name: 'sec', table_name: 'orders', column_name: 'order_id', method: 'redact', condition_column: 'order_id', condition_value: '10' }, { token: srv.tokens.admin });
    assert.equal(self.status, 400, self.text);
    assert.equal(self.body.error.code, 'masked_condition_column');
    const onMasked = await srv.s.request('POST', '/api/masking/policies', { schema_name: 'sec', table_name: 'orders', column_name: 'order_id', method: 'redact', condition_column: 'email', condition_value: 'x' }, { token: srv.tokens.admin });
    assert.equal(onMasked.status, 400, onMasked.text);
    assert.equal(onMasked.body.error.details.field, 'condition_column');
    const maskingCondition = await srv.s.request('POST', '/api/masking/policies', { schema_name: 'sec', table_name: 'people', column_name: 'tier', method: 'redact' }, { token: srv.tokens.admin });
    assert.equal(maskingCondition.status, 400, maskingCondition.text);
    assert.equal(maskingCondition.body.error.code, 'masked_condition_column');
  });

  it('point 8: a condition column masked by a namesake policy elsewhere makes the mask unconditional', async () => {
    await srv.s.app.db.run("CREATE TABLE sec.tiers (tier VARCHAR); INSERT INTO sec.tiers VALUES ('vip')");
    const id = await policy(srv, { schema_name: 'sec', table_name: 'tiers', column_name: 'tier', method: 'redact' });
    try {
      for (const sql of ['SELECT note, tier FROM sec.people ORDER BY id', 'SELECT p.note, p.tier FROM sec.people p ORDER BY p.id']) {
        const r = await srv.s.request('POST', '/api/query', { sql }, { token: srv.tokens.viewer });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body.rows, [['***', '***'], ['***', '***'], ['***', '***'], ['***', '***']], `${sql}: which rows are masked must not reveal the tier`);
      }
    } finally {
      await srv.s.request('DELETE', `/api/masking/policies/${id}`, undefined, { token: srv.tokens.admin });
    }
  });

  // ---------------------------------------------------------------- point 9: stars and COLUMNS in predicates
  const PREDICATES: Array<{ sql: string; clause: string }> = [
    { sql: "SELECT id FROM sec.people ORDER BY COLUMNS('salary')", clause: 'ORDER BY' },
    { sql: "SELECT id FROM sec.people ORDER BY COLUMNS('sal.*') DESC", clause: 'ORDER BY' },
    { sql: "SELECT DISTINCT ON (COLUMNS('email')) id FROM sec.people", clause: 'DISTINCT ON' },
    { sql: "SELECT id FROM sec.people WHERE COLUMNS('ssn') = '123-45-6789'", clause: 'WHERE' },
    { sql: "SELECT id FROM sec.people WHERE COLUMNS('(?i)SSN') LIKE '1%'", clause: 'WHERE' },
    { sql: 'SELECT id FROM sec.people WHERE COLUMNS(*) IS NOT NULL', clause: 'WHERE' },
    { sql: "SELECT id FROM sec.people WHERE COLUMNS(['id', 'email']) IS NOT NULL", clause: 'WHERE' },
    { sql: "SELECT id FROM sec.people WHERE COLUMNS(c -> c LIKE 'e%') = 'x'", clause: 'WHERE' },
    { sql: 'SELECT id FROM sec.people WHERE COLUMNS(* EXCLUDE (id)) IS NOT NULL', clause: 'WHERE' },
    { sql: 'SELECT count(*) FROM sec.people GROUP BY COLUMNS(*)', clause: 'GROUP BY' },
    { sql: "SELECT count(*) FROM sec.people GROUP BY COLUMNS('e.*')", clause: 'GROUP BY' },
    { sql: "SELECT count(*) FROM sec.people GROUP BY id HAVING max(COLUMNS('note')) > ''", clause: 'HAVING' },
    { sql: "SELECT id FROM sec.people QUALIFY row_number() OVER (PARTITION BY COLUMNS('email')) = 1", clause: 'QUALIFY' },
    { sql: "SELECT id, row_number() OVER (PARTITION BY COLUMNS('email')) FROM sec.people", clause: 'window PARTITION BY' },
    { sql: "SELECT id, rank() OVER (ORDER BY COLUMNS(['salary'])) FROM sec.people", clause: 'window ORDER BY' },
    { sql: "SELECT o.order_id FROM sec.orders o JOIN sec.people p ON COLUMNS('email') = o.email", clause: 'JOIN ON' },
    { sql: 'SELECT o.order_id FROM sec.orders o JOIN sec.people p ON COLUMNS(p.*) IS NOT NULL', clause: 'JOIN ON' },
    { sql: 'SELECT email, ssn FROM sec.people ORDER BY ALL', clause: 'ORDER BY' },
    { sql: 'SELECT email, count(*) FROM sec.people GROUP BY ALL', clause: 'GROUP BY ALL' },
    { sql: 'SELECT id, email FROM sec.people ORDER BY 2', clause: 'ORDER BY' },
    { sql: 'SELECT p.id, p.email FROM sec.people p ORDER BY 2', clause: 'ORDER BY' },
    { sql: 'SELECT email, count(*) FROM sec.people GROUP BY 1', clause: 'GROUP BY' },
    { sql: 'SELECT id FROM sec.people ORDER BY #2', clause: 'ORDER BY' },
    { sql: 'SELECT * FROM sec.people ORDER BY COLUMNS(*)', clause: 'ORDER BY' },
  ];
  for (const role of ROLES) {
    it(`point 9, ${role}: stars, COLUMNS, ALL and positions in predicates are ${role === 'admin' ? 'allowed (exempt)' : 'refused with 403'} on every route`, async () => {
      for (const { sql, clause } of PREDICATES) {
        for (const [route, r] of await everyRoute(srv, role, sql)) {
          if (role === 'admin') assert.ok(r.status !== 403, `${sql} via ${route}: ${r.text.slice(0, 300)}`);
          else {
            assert.equal(r.status, 403, `${sql} via ${route}: ${r.text.slice(0, 300)}`);
            assert.equal(r.body.error.code, 'masked_column_in_predicate', `${sql} via ${route}`);
            assert.equal(r.body.error.details.clause, clause, `${sql} via ${route}`);
          }
        }
      }
    });
  }

  it('point 9: stars that reach no masked column stay allowed', async () => {
    for (const sql of [
      "SELECT id FROM sec.people ORDER BY COLUMNS('^id$')",
      "SELECT id FROM sec.people WHERE COLUMNS(['id']) > 0",
      'SELECT id FROM sec.people WHERE EXISTS (SELECT * FROM sec.orders)',
      'SELECT p.id, p.email FROM sec.people p ORDER BY 1',
      'SELECT id, count(*) FROM sec.people GROUP BY ALL',
    ]) {
      const r = await srv.s.request('POST', '/api/query', { sql }, { token: srv.tokens.viewer });
      assert.equal(r.status, 200, `${sql}: ${r.text}`);
    }
  });
});

// ---------------------------------------------------------------- point 12: every method over edge values, both paths
const METHODS: Array<[string, Record<string, unknown>]> = [
  ['hash', {}],
  ['redact', {}],
  ['null', {}],
  ['partial', { show_first: 1, show_last: 1 }],
  ['truncate', {}],
  ['email', {}],
  ['phone', {}],
  ['first_initial', {}],
  ['ip_address', {}],
  ['credit_card', {}],
  ['range', {}],
  ['noise', {}],
  ['date_shift', { max_days: 36500 }],
  ['consistent_hash', {}],
];
const EDGE_VALUES: Record<string, string[]> = {
  INTEGER: ['-2147483648', '-1', '0', '1', '2147483647', 'NULL'],
  BIGINT: ['-9223372036854775808', '0', '9223372036854775807', 'NULL'],
  HUGEINT: ['-170141183460469231731687303715884105727', '0', '170141183460469231731687303715884105727', 'NULL'],
  UBIGINT: ['0', '18446744073709551615', 'NULL'],
  DOUBLE: ['-1.7976931348623157e308', '-0.5', '0', '5e-324', '1.7976931348623157e308', "'inf'", "'-inf'", "'nan'", 'NULL'],
  'DECIMAL(18,3)': ['-999999999999999.999', '0', '0.001', '999999999999999.999', 'NULL'],
  DATE: ["'5877642-06-25 (BC)'", "'0001-01-01'", "'1970-01-01'", "'2024-02-29'", "'5881580-07-10'", "'infinity'", "'-infinity'", 'NULL'],
  TIMESTAMP: ["'290309-12-22 (BC) 00:00:00'", "'1970-01-01 00:00:00'", "'294247-01-10 04:00:54.775806'", "'infinity'", 'NULL'],
  VARCHAR: ["''", "' '", "'ünïcødé ✓ 日本語'", "'😀@😀.com'", "'-1'", "'0'", "'2024-01-05'", "'5881580-07-10'", "'x' || repeat('y', 500)", "'192.168.0.1'", "'+1 (555) 010-9999'", 'NULL'],
};

describe('security: every masking method over edge values', () => {
  let srv: RoleServer;
  const tables: Array<{ table: string; method: string; type: string }> = [];

  before(async () => {
    srv = await startServerWithRoles(makeProject());
    const statements = ['CREATE SCHEMA edge'];
    let n = 0;
    for (const [method] of METHODS) {
      for (const [type, values] of Object.entries(EDGE_VALUES)) {
        const table = `t${n++}`;
        tables.push({ table, method, type });
        statements.push(`CREATE TABLE edge.${table} (id INTEGER, v ${type})`);
        statements.push(`INSERT INTO edge.${table} VALUES ${values.map((v, i) => `(${i}, CAST(${v} AS ${type}))`).join(', ')}`);
      }
    }
    await srv.s.app.db.run(statements.join(';\n'));
    for (const { table, method } of tables) {
      await policy(srv, { schema_name: 'edge', table_name: table, column_name: 'v', method, method_config: METHODS.find((m) => m[0] === method)![1] });
    }
  });
  after(async () => srv.s.close());

  /**
   * A masked value that may equal its input (docs/security.md): NULL, text of only whitespace,
   * and noise of a value too small for its percentage to move it (0, or ±1 rounded back in an
   * integer column: noise is a percentage of the value).
   */
  const step = (type: string) => (/INT/.test(type) ? 1 : /^DECIMAL\(\d+,(\d+)\)$/.test(type) ? 10 ** -Number(/,(\d+)\)$/.exec(type)![1]) : 1e-300);
  const allowedSame = (method: string, raw: unknown, type: string) =>
    raw === null || (typeof raw === 'string' && raw.trim() === '') || (method === 'noise' && Math.abs(Number(raw)) * 0.1 < step(type));

  for (const [method] of METHODS) {
    it(`${method}: no error and no raw value for any type's edge values, late and wrapped, for viewer and editor`, async () => {
      for (const { table, type } of tables.filter((t) => t.method === method)) {
        const admin = await srv.s.request('POST', '/api/query', { sql: `SELECT id, v FROM edge.${table} ORDER BY id` }, { token: srv.tokens.admin });
        assert.equal(admin.status, 200, admin.text);
        const raw = new Map<number, unknown>(admin.body.rows.map((r: unknown[]) => [r[0], r[1]]));
        for (const role of BOUND) {
          for (const [shape, sql] of [
            ['late', `SELECT t.id, t.v FROM edge.${table} t ORDER BY t.id`],
            ['wrapped', `SELECT * FROM edge.${table} ORDER BY id`],
          ]) {
            const r = await srv.s.request('POST', '/api/query', { sql }, { token: srv.tokens[role] });
            assert.equal(r.status, 200, `${method} on ${type} (${shape}, ${role}): ${r.text.slice(0, 300)}`);
            assert.equal(r.body.rows.length, raw.size);
            for (const [id, masked] of r.body.rows as Array<[number, unknown]>) {
              const original = raw.get(id);
              if (allowedSame(method, original, type)) continue;
              assert.notDeepEqual(masked, original, `${method} on ${type} ${JSON.stringify(original)} (${shape}, ${role}) came back raw`);
            }
          }
        }
      }
    });
  }
});

// ---------------------------------------------------------------- issue 22: the catalog race
describe('security: masking and the catalog race (issue 22)', () => {
  it('a policy column missing from the cached catalog is re-read before answering: a seed reloaded with the column is masked at once', async () => {
    const root = makeProject({ 'seeds/customers.csv': 'id,email\n1,ada@example.com\n2,alan@example.org\n' });
    // The masking catalog's snapshot ages on a clock the test moves (its 2 s trust, its 50 ms re-read guard).
    const clock = new FakeClock(Date.now());
    const srv = await startServerWithRoles(root, { clock });
    try {
      const load = async () => {
        const r = await srv.s.request('POST', '/api/seeds', { force: true }, { token: srv.tokens.admin });
        assert.equal(r.status, 200, r.text);
      };
      const viewerRows = async () => {
        const r = await srv.s.request('POST', '/api/query', { sql: 'SELECT * FROM seeds.customers' }, { token: srv.tokens.viewer });
        assert.equal(r.status, 200, r.text);
        return r.text;
      };
      await load();
      await policy(srv, { schema_name: 'seeds', table_name: 'customers', column_name: 'email', method: 'email' });
      assert.ok(!(await viewerRows()).includes('ada@'));
      // Reload without the column, and let the masking catalog read the table that way.
      fs.writeFileSync(path.join(root, 'seeds/customers.csv'), 'id,name\n1,Ada\n2,Alan\n');
      await load();
      await clock.advance(2100);
      assert.ok((await viewerRows()).includes('Ada'));
      // Reload with the column and query at once (well inside the 2 s trust, past the 50 ms guard
      // a reload takes anyway): the cached catalog lacks `email`.
      fs.writeFileSync(path.join(root, 'seeds/customers.csv'), 'id,email\n1,ada@example.com\n2,alan@example.org\n');
      await load();
      await clock.advance(100);
      const text = await viewerRows();
      assert.ok(!text.includes('ada@') && !text.includes('alan@'), `raw emails right after the reload: ${text}`);
      assert.ok(text.includes('***@example.com'), text);
    } finally {
      await srv.s.close();
    }
  });
});
