/**
 * Queries with masking on a ClickHouse target (issue 31, item 5): `dp query --env prod`,
 * `POST /api/query` and its CSV export, and the SQL page's catalog run against a real 2-shard
 * cluster (test/support/clickhouse.ts), masked in DuckDB SQL and then transpiled. The bypass set
 * is the shape list of test/security/masking.test.ts (aliases, CTEs, subqueries, `*`, functions,
 * casts, views): each either answers masked values or is refused, never a raw value. A stop
 * (client gone, deadline) ends the query on the server (`KILL QUERY`).
 *
 * The first describe needs no server: a target that would run a text without its masks (a
 * transpiler that dropped one) is refused by the runner's check of what the target runs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import type { QueryTarget, QueryTargetRun } from '../../../sdk/index.js';
import { runCommand } from '../../../sdk/testing.js';
import { bootApp, makeProject } from '../../helpers.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../../support/clickhouse.js';
import { startServerWithRoles, type RoleServer } from '../../support/role-server.js';
import { ClickHouseTarget } from '../../../plugins/target-clickhouse/client.js';

const missing = clickhouseUnavailable();
if (missing) console.log(`# skipped: the ClickHouse query tests need the Debian packages: ${missing}`);

const EMAILS = ['ada@example.com', 'alan@example.org', 'grace@navy.mil'];
const SSNS = ['123-45-6789', '987-65-4321', '555-12-3456'];
const PHONES = ['+1 555 0100', '+1 555 0101', '+1 555 0102'];
const RAW = [...EMAILS, ...SSNS, ...PHONES, 'ada@', 'ADA@EXAMPLE', '6789'];
const leaked = (text: string) => RAW.find((v) => text.toLowerCase().includes(v.toLowerCase()));

describe('queries on a target: what the target runs is checked like the DuckDB text', () => {
  let app: App;
  before(async () => {
    app = await bootApp(makeProject({}));
    await app.db.run(`CREATE SCHEMA crm; CREATE TABLE crm.people (id INTEGER, email VARCHAR); INSERT INTO crm.people VALUES (1, 'ada@example.com')`);
    const r = await runCommand(app, ['mask', 'add', '--schema', 'crm', '--table', 'people', '--column', 'email', '--method', 'redact']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });
  after(async () => app?.close());

  /** A target over the local file that runs `unmasked` instead of what it was given (a transpiler that dropped the mask). */
  const droppingTarget = (unmasked: string): QueryTarget => ({
    id: 'test:dropping',
    resolvableColumns: () => app.db.catalog.resolvableColumns(),
    unresolved: async () => [],
    async read(_sql: string, _window, run: QueryTargetRun) {
      await run.verify(unmasked);
      return app.db.withConnection((c) => c.query(unmasked));
    },
    async stream() {
      throw new Error('not used');
    },
  });

  it('a target whose text lost the mask is refused, and no value leaves', async () => {
    const viewer = { username: 'v', role: 'viewer' as const, authenticated: true };
    // A computed column: masked by a rewrite of the SQL (not at the result), which the target's text must keep.
    const sql = 'SELECT upper(email) AS e FROM crm.people';
    const honest = await app.queries.run({ sql, caller: viewer, purpose: 'query' });
    assert.deepEqual(honest.rows, [['***']], 'the same query on the file is masked');
    await assert.rejects(
      app.queries.run({ sql, caller: viewer, purpose: 'query', target: droppingTarget(sql) }),
      (e: any) => e.status >= 400 && !leaked(String(e.message)),
    );
  });
});

describe('queries with masking on a ClickHouse cluster', { skip: missing, timeout: 300_000 }, () => {
  let ch: RunningClickHouseCluster;
  let srv: RoleServer;
  let direct: ClickHouseTarget;
  const q = (role: 'viewer' | 'editor' | 'admin', sql: string, route = '/api/query') => srv.s.request('POST', route, { sql }, { token: srv.tokens[role] });

  before(async () => {
    ch = await startClickHouseCluster();
    direct = await ClickHouseTarget.open({ type: 'clickhouse', url: ch.nodes[1]!.url, user: 'default', password: ch.password });
    const root = makeProject({
      'project.yml': `name: chq
database:
  path: control.duckdb
query:
  timeout_seconds: { admin: 3600, editor: 1, viewer: 3600 }
environments:
  prod:
    target: { type: clickhouse, url: '${ch.nodes[0]!.url}', cluster: ${ch.cluster}, database: shop, user: default, password: '\${CH_PASSWORD}' }
`,
      '.env': `CH_PASSWORD=${ch.password}\n`,
      'seeds/people.csv': `id,email,ssn,phone,tier\n${EMAILS.map((e, i) => `${i + 1},${e},${SSNS[i]},${PHONES[i]},${i === 1 ? 'std' : 'vip'}`).join('\n')}\n`,
      'transform/main/people_v.sql': '-- @config materialized=view\nSELECT id, email, tier FROM seeds.people\n',
    });
    srv = await startServerWithRoles(root, { env: 'prod' });
    for (const argv of [['seed'], ['transform']]) {
      const r = await runCommand(srv.s.app, [...argv, '--json']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
    }
    for (const [column, method] of [['email', 'redact'], ['ssn', 'null'], ['phone', 'consistent_hash']]) {
      const r = await srv.s.request('POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: column, method }, { token: srv.tokens.admin });
      assert.equal(r.status, 201, r.text);
    }
  });
  after(async () => {
    await srv?.s.close();
    await direct?.close();
    await ch?.stop();
  });

  it('queries read the cluster, not the local file', async () => {
    const r = await q('admin', 'SELECT count(*) AS n FROM seeds.people');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.rows, [['3']]);
    assert.deepEqual(r.body.column_types, ['UInt64'], "ClickHouse's type: the server answered");
    assert.equal(await srv.s.app.db.catalog.exists('seeds', 'people'), false, 'the seed is on the target only');
    const admin = await q('admin', 'SELECT id, email FROM seeds.people ORDER BY id');
    assert.deepEqual(admin.body.rows.map((row: unknown[]) => row[1]), EMAILS, 'the admin is exempt');
    const unqualified = await q('admin', 'SELECT count(*) AS n FROM people_v');
    assert.deepEqual(unqualified.body.rows, [['3']], 'an unqualified name is main.<name>, as on DuckDB');
  });

  it('masked shapes answer masked values for a viewer', async () => {
    for (const sql of [
      'SELECT id, email FROM seeds.people ORDER BY id',
      'SELECT email AS e FROM seeds.people',
      'SELECT p.id, p.email FROM seeds.people AS p ORDER BY p.id',
      'SELECT p.email AS contact, p.ssn FROM seeds.people p',
      'SELECT email FROM people_v',
    ]) {
      const r = await q('viewer', sql);
      assert.equal(r.status, 200, `${sql}: ${r.text}`);
      assert.equal(leaked(r.text), undefined, `${sql}: ${r.text}`);
      assert.ok(r.body.masked_columns.length > 0, `${sql}: masked_columns`);
      assert.ok(r.body.rows.every((row: unknown[]) => row.some((v) => v === '***' || v === null)), `${sql}: ${r.text}`);
    }
  });

  const BYPASS = [
    'SELECT * FROM seeds.people',
    'SELECT people.* FROM seeds.people',
    'SELECT email AS x, ssn AS y, phone AS z FROM seeds.people',
    'SELECT p.email AS x FROM seeds.people AS p -- a comment on the last line',
    'SELECT p.email /* ) UNION ALL SELECT email FROM seeds.people */ FROM seeds.people AS p',
    'WITH t AS (SELECT email FROM seeds.people) SELECT * FROM t',
    'SELECT e FROM (SELECT email AS e FROM seeds.people) s',
    'SELECT (SELECT max(email) FROM seeds.people) AS m',
    'SELECT upper(email) AS u, lower(ssn) AS l FROM seeds.people',
    'SELECT CAST(email AS VARCHAR) AS c, email::VARCHAR AS d FROM seeds.people',
    "SELECT concat(email, '') AS c, substr(ssn, 1, 20) AS s FROM seeds.people",
    'SELECT email FROM seeds.people UNION ALL SELECT ssn FROM seeds.people',
    'SELECT DISTINCT email FROM seeds.people',
    'SELECT max(email) AS m, min(ssn) AS n, string_agg(phone, \',\') AS p FROM seeds.people',
    'SELECT phone FROM seeds.people',
    'SELECT p.phone FROM seeds.people AS p',
    'SELECT * FROM people_v',
    'SELECT v.email FROM people_v v',
    "SELECT id FROM seeds.people WHERE email LIKE 'ada%'",
    'SELECT id FROM seeds.people ORDER BY ssn',
    'SELECT count(*) FROM seeds.people GROUP BY email',
    'SELECT a.id FROM seeds.people a JOIN seeds.people b ON a.email = b.email',
    "SELECT id FROM seeds.people WHERE id IN (SELECT id FROM seeds.people WHERE ssn = '123-45-6789')",
    // Wrappers expanded into their columns on 18.16 (people_v's email is masked through lineage, no keyed mask).
    'SELECT upper(email) AS u FROM people_v',
    "SELECT concat(email, '') AS c, substr(email, 1, 30) AS s FROM people_v",
    'SELECT e FROM (SELECT email AS e FROM people_v) s',
    'SELECT email FROM people_v UNION ALL SELECT tier FROM people_v',
    'SELECT DISTINCT email FROM people_v',
    'SELECT max(email) AS m, min(email) AS n FROM people_v',
    'SELECT CAST(email AS VARCHAR) AS c FROM people_v AS v',
    // Keyed masks: computed by dp on whole select items only.
    'SELECT p.id, p.phone AS ph FROM seeds.people AS p',
    "SELECT concat(phone, '') AS c FROM seeds.people",
  ];
  for (const role of ['viewer', 'editor'] as const) {
    it(`${role}: no bypass shape returns a raw value, on the query and the CSV export`, async () => {
      for (const sql of BYPASS) {
        for (const route of ['/api/query', '/api/query/export-csv']) {
          const r = await q(role, sql, route);
          if (role === 'editor' && r.status === 408) continue; // the editor's 1 s deadline under load: nothing answered
          assert.equal(leaked(r.text), undefined, `${sql} via ${route}: ${r.text.slice(0, 400)}`);
          assert.ok(r.status === 200 || (r.status >= 400 && r.status < 500), `${sql} via ${route}: ${r.text.slice(0, 400)}`);
          if (r.status !== 200) assert.ok(r.body?.error?.code, `${sql}: a clear error, ${r.text}`);
        }
      }
    });
  }

  it('predicates on masked columns are refused; a keyed mask masks whole select items in dp and refuses a computation on its column', async () => {
    const where = await q('viewer', "SELECT id FROM seeds.people WHERE email = 'ada@example.com'");
    assert.equal(where.status, 403, where.text);
    assert.equal(where.body.error.code, 'masked_column_in_predicate');
    const keyed = await q('viewer', 'SELECT id, phone FROM seeds.people ORDER BY id');
    assert.equal(keyed.status, 200, keyed.text);
    const phones = keyed.body.rows.map((row: unknown[]) => row[1]);
    assert.ok(phones.every((p: unknown) => typeof p === 'string' && /^[0-9a-f]{8}$/.test(p)), keyed.text);
    assert.equal(new Set(phones).size, 3, 'a pseudonym per value');
    const again = await q('viewer', 'SELECT p.phone FROM seeds.people AS p ORDER BY p.id');
    assert.deepEqual(again.body.rows.map((row: unknown[]) => row[0]), phones, 'the same value gives the same pseudonym');
    for (const sql of ['SELECT upper(phone) AS u FROM seeds.people', 'SELECT * FROM seeds.people', 'SELECT max(phone) AS m FROM seeds.people']) {
      const computed = await q('viewer', sql);
      assert.equal(computed.status, 400, `${sql}: ${computed.text}`);
      assert.equal(computed.body.error.code, 'unsupported_on_target');
      assert.match(computed.body.error.message, /keyed masks .* cannot mask on a ClickHouse target/);
    }
  });

  it('on 18.16 (no SELECT * REPLACE) a masking wrapper is expanded into its columns: masked values, never a raw one', async () => {
    for (const sql of ['SELECT * FROM people_v ORDER BY id', 'SELECT t.* FROM people_v AS t ORDER BY t.id', 'SELECT e FROM (SELECT email AS e, id FROM people_v) s ORDER BY id']) {
      const r = await q('viewer', sql);
      assert.equal(r.status, 200, `${sql}: ${r.text}`);
      assert.equal(leaked(r.text), undefined, r.text);
      const email = r.body.columns.indexOf(r.body.columns.includes('email') ? 'email' : 'e');
      assert.deepEqual(r.body.rows.map((row: unknown[]) => row[email]), ['***', '***', '***'], `${sql}: ${r.text}`);
    }
    const admin = await q('admin', 'SELECT * FROM people_v ORDER BY id');
    assert.deepEqual(admin.body.rows.map((row: unknown[]) => row[1]), EMAILS, 'the admin is exempt');
  });

  it("no key of a keyed mask, and no parameter value, ever reaches the server's query log", async () => {
    const key = /^DP_MASKING_KEY=(.+)$/m.exec(fs.readFileSync(path.join(srv.s.app.project.root, '.env'), 'utf8'))?.[1]?.trim();
    assert.ok(key && key.length >= 32, 'the project key was made by the keyed mask');
    const probe = 'dp-param-probe-7731';
    await srv.s.request('POST', '/api/query', { sql: 'SELECT id FROM seeds.people WHERE tier = $tier', params: { tier: probe } }, { token: srv.tokens.admin });
    for (const node of ch.nodes) {
      const server = await ClickHouseTarget.open({ type: 'clickhouse', url: node.url, user: 'default', password: ch.password });
      try {
        await server.command('SYSTEM FLUSH LOGS');
        // Read here and searched here: the search terms never go to the server.
        const logged = (await server.query('SELECT query FROM system.query_log')).rows.map((row) => String(row[0]));
        assert.ok(logged.some((text) => text.includes('seeds')), 'the server logs the queries dp sent');
        const leak: string | undefined = logged.find((text) => text.includes(key) || text.includes(probe) || text.includes('_masking'));
        assert.equal(leak, undefined, `node ${node.url}: a key, a parameter value or the key table in the query log`);
      } finally {
        await server.close();
      }
    }
  });

  it('read-only on the target: no file, no system table, no function DuckDB does not know, no parameter', async () => {
    for (const [sql, code] of [
      ["SELECT * FROM read_csv('/etc/passwd')", 'read_only_violation'],
      ["SELECT file('/etc/passwd') AS f", 'read_only_violation'],
      ["SELECT * FROM '/etc/passwd'", 'read_only_violation'],
      ['SELECT name FROM system.tables', 'table_not_found'],
      ['SELECT * FROM shop.__dp_run_lock', 'table_not_found'],
      ['SELECT id FROM seeds.people WHERE id = $id', 'unsupported_on_target'],
      ['SELECT count(*) FROM range(10)', 'unsupported_on_target'],
      ['SELECT * FROM _service.target_runs', 'unsupported_on_target'],
    ] as const) {
      const r = await q('admin', sql);
      assert.equal(r.body?.error?.code, code, `${sql}: ${r.text}`);
    }
    const explain = await q('admin', 'SELECT 1', '/api/query/explain');
    assert.equal(explain.body.error.code, 'not_on_target', explain.text);
  });

  it('dp query --env prod runs on the cluster, masked with --as viewer, and as CSV', async () => {
    // The server's own app: its active environment is prod, as `dp query --env prod` is.
    const app = srv.s.app;
    {
      const count = await runCommand(app, ['query', 'SELECT count(*) AS n FROM seeds.people', '--json']);
      assert.equal(count.code, 0, count.stdout + count.stderr);
      assert.deepEqual(JSON.parse(count.stdout).rows, [['3']]);
      const masked = await runCommand(app, ['query', 'SELECT p.id, p.email FROM seeds.people p ORDER BY p.id', '--as', 'viewer', '--json']);
      assert.equal(masked.code, 0, masked.stdout + masked.stderr);
      assert.equal(leaked(masked.stdout), undefined, masked.stdout);
      assert.deepEqual(JSON.parse(masked.stdout).rows.map((r: unknown[]) => r[1]), ['***', '***', '***']);
      const refused = await runCommand(app, ['query', 'SELECT * FROM seeds.people', '--as', 'viewer', '--json']);
      assert.equal(refused.code, 1);
      assert.equal(leaked(refused.stdout + refused.stderr), undefined);
    }
  });

  it("the SQL page's catalog lists the target's tables", async () => {
    const r = await srv.s.request('GET', '/api/autocomplete', undefined, { token: srv.tokens.viewer });
    assert.equal(r.status, 200, r.text);
    const people = r.body.tables.find((t: any) => t.schema === 'seeds' && t.name === 'people');
    assert.deepEqual(people?.columns.map((c: any) => c.name), ['id', 'email', 'ssn', 'phone', 'tier']);
    assert.ok(r.body.keywords.includes('SELECT'));
  });

  describe('a stopped query ends on the server (KILL QUERY)', () => {
    let solo: RoleServer;
    // 10^11 numbers counted block by block (a view over system.numbers, made on the server): many minutes, and a stop lands between two blocks.
    const LONG = 'SELECT count(*) AS dp_kill_probe FROM main.forever';
    const running = async () => Number((await direct.query("SELECT count() FROM system.processes WHERE query LIKE '%dp_kill_probe%' AND query NOT LIKE '%system.processes%'")).rows[0]?.[0]);
    /** Polls the server's process list (an external state with no event to wait on) until `want`. */
    const until = async (want: (n: number) => boolean) => {
      for (;;) {
        if (want(await running())) return;
        await new Promise((r) => setImmediate(r));
      }
    };
    before(async () => {
      solo = await startServerWithRoles(
        makeProject({
          'project.yml': `name: solo\ndatabase:\n  path: solo.duckdb\nquery:\n  timeout_seconds: { admin: 3600, editor: 1, viewer: 3600 }\nenvironments:\n  solo:\n    target: { type: clickhouse, url: '${ch.nodes[1]!.url}', database: solo, user: default, password: '\${CH_PASSWORD}' }\n`,
          '.env': `CH_PASSWORD=${ch.password}\n`,
        }),
        { env: 'solo' },
      );
      await direct.command('CREATE DATABASE IF NOT EXISTS main');
      await direct.command('CREATE VIEW main.forever AS SELECT number AS n FROM system.numbers LIMIT 100000000000');
    });
    after(async () => solo?.s.close());

    it('a client that leaves stops its query on the server', async () => {
      const controller = new AbortController();
      const request = fetch(`${solo.s.url}/api/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${solo.tokens.admin}` },
        body: JSON.stringify({ sql: LONG }),
        signal: controller.signal,
      }).catch((e) => e);
      await until((n) => n > 0);
      controller.abort();
      await request;
      // The admin's deadline is an hour: only the KILL ends it now.
      await until((n) => n === 0);
    });

    it("at the role's deadline the query is answered 408 and ended on the server", async () => {
      const solo408 = await solo.s.request('POST', '/api/query', { sql: LONG }, { token: solo.tokens.editor });
      assert.equal(solo408.status, 408, solo408.text);
      assert.equal(solo408.body.error.code, 'query_timeout');
      await until((n) => n === 0);
    });
  });
});
