/**
 * Native ClickHouse models and the target's table listing on a real 2-shard cluster
 * (test/support/clickhouse.ts): a model in ClickHouse-only SQL (`arrayJoin`, `toStartOfHour`,
 * `LIMIT n BY`, `ANY LEFT JOIN`) is discovered, verified with `DESCRIBE` and built untranspiled
 * with the usual materializations, in dependency order with the DuckDB-SQL models around it; one
 * the server refuses builds nothing. `dp tables` and `GET /api/tables` list the target's tables
 * with their rows. A viewer's query of a native model's table reading a masked column is masked
 * or refused, never a raw value. Skipped, saying why, only when the Debian packages are absent.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../../sdk/testing.js';
import { clickhouseTestProject } from '../../support/clickhouse-project.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../../support/clickhouse.js';
import { startServerWithRoles, type RoleServer } from '../../support/role-server.js';

const missing = clickhouseUnavailable();
if (missing) console.log(`# skipped: the ClickHouse tests need the Debian packages: ${missing}`);

const NAMES = ['Ann', 'Bob', 'Cid', 'Dee'];

describe('native ClickHouse models and dp tables on a ClickHouse cluster', { skip: missing, timeout: 300_000 }, () => {
  let ch: RunningClickHouseCluster;
  let srv: RoleServer;
  const dp = (argv: string[]) => runCommand(srv.s.app, argv);
  const as = (role: 'viewer' | 'admin', method: string, url: string, body?: unknown) => srv.s.request(method, url, body, { token: srv.tokens[role] });

  before(async () => {
    ch = await startClickHouseCluster();
    const root = clickhouseTestProject(ch, {
      // One row per customer (LIMIT 1 BY), its name or country unrolled by arrayJoin: DuckDB's parser refuses LIMIT n BY.
      'transform/marts/tags.sql':
        "-- @config dialect=clickhouse, materialized=table\nSELECT id, toStartOfHour(toDateTime('2024-01-01 10:20:00')) AS hour, arrayJoin([name, country]) AS tag\nFROM seeds.customers\nLIMIT 1 BY id\n",
      // 18.16 loses a Distributed table's alias in a JOIN: both sides are subqueries.
      'transform/marts/paid.sql':
        '-- @config dialect=clickhouse, materialized=view\nSELECT o.id AS id, c.name AS name\nFROM (SELECT id, customer_id FROM staging.stg_orders) AS o\nANY LEFT JOIN (SELECT id, name FROM seeds.customers) AS c ON o.customer_id = c.id\n',
      'transform/marts/tag_count.sql': 'SELECT count(*) AS n FROM marts.tags\n',
      'transform/marts/broken.sql': '-- @config dialect=clickhouse\nSELECT noSuchFunction(id) AS x FROM seeds.customers LIMIT 1 BY id\n',
    });
    srv = await startServerWithRoles(root, { env: 'prod' });
    assert.equal((await dp(['seed'])).code, 0);
  });
  after(async () => {
    await srv?.s.close();
    await ch?.stop();
  });

  it('dp transform builds the native models untranspiled, in order with the DuckDB-SQL ones; the one the server refuses builds nothing', async () => {
    const r = await dp(['transform', '--json']);
    const results = Object.fromEntries(JSON.parse(r.stdout).results.map((x: { model: string }) => [x.model, x]));
    assert.deepEqual(
      Object.fromEntries(Object.entries(results).map(([k, v]) => [k, (v as { status: string }).status])),
      { 'staging.stg_orders': 'built', 'marts.tags': 'built', 'marts.paid': 'built', 'marts.tag_count': 'built', 'marts.broken': 'error' },
    );
    assert.match(results['marts.broken'].error, /^transform\/marts\/broken\.sql: marts\.broken: ClickHouse 18\.\d+.* cannot run the model's SELECT: .*noSuchFunction/);
    const tags = await as('admin', 'POST', '/api/query', { sql: 'SELECT id, tag FROM marts.tags ORDER BY id' });
    assert.equal(tags.status, 200, tags.text);
    assert.deepEqual(tags.body.rows.map((row: unknown[]) => String(row[0])), ['1', '2', '3', '4'], 'one row per id (LIMIT 1 BY)');
    assert.deepEqual(tags.body.rows.map((row: unknown[]) => row[1]), NAMES, 'the first of [name, country]');
    const count = await as('admin', 'POST', '/api/query', { sql: 'SELECT n FROM marts.tag_count' });
    assert.deepEqual(count.body.rows, [['4']]);
    const paid = await as('admin', 'POST', '/api/query', { sql: 'SELECT count(*) AS n FROM marts.paid' });
    assert.deepEqual(paid.body.rows, [['4']]);
    const tables = JSON.parse((await dp(['tables', '--schema', 'marts', '--json'])).stdout);
    assert.equal(tables.some((t: { name: string }) => t.name === 'broken'), false, 'verified first: nothing was built');
  });

  it('dp check binds a native model with DESCRIBE on the target and reports the one the server refuses', async () => {
    const report = JSON.parse((await dp(['check', '--json'])).stdout);
    const byModel = Object.fromEntries(report.validation.models.map((m: { model: string }) => [m.model, m]));
    assert.equal(byModel['marts.tags'].bound, true, JSON.stringify(byModel['marts.tags']));
    assert.match(byModel['marts.broken'].errors[0], /noSuchFunction/);
  });

  it("dp tables --env prod and GET /api/tables list the target's tables with their rows, not the local file's", async () => {
    const r = await dp(['tables', '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const rows = Object.fromEntries(JSON.parse(r.stdout).map((t: { schema: string; name: string; type: string; rows: number | null }) => [`${t.schema}.${t.name}`, [t.type, t.rows]]));
    assert.deepEqual(rows['seeds.customers'], ['table', 4], 'rows summed over both shards');
    assert.deepEqual(rows['marts.tags'], ['table', 4]);
    assert.deepEqual(rows['marts.paid'], ['view', null]);
    assert.deepEqual(rows['staging.stg_orders'], ['view', null]);
    assert.equal(Object.keys(rows).some((k) => k.includes('__dp_') || k.startsWith('_service.') || k.startsWith('system.')), false, Object.keys(rows).join(', '));
    assert.equal(await srv.s.app.db.catalog.exists('marts', 'tags'), false, 'the local file holds none of them');

    const listed = await as('viewer', 'GET', '/api/tables?schema=marts');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.map((t: { name: string; type: string }) => `${t.name}:${t.type}`).sort(), ['paid:view', 'tag_count:table', 'tags:table']);
    const described = await as('viewer', 'GET', '/api/tables/marts/tags');
    assert.equal(described.status, 200, described.text);
    assert.deepEqual(described.body.columns.map((c: { name: string }) => c.name), ['id', 'hour', 'tag']);
    assert.equal((await as('viewer', 'GET', '/api/tables/marts/nope')).status, 404);
  });

  it('lineage says not analysed; a viewer reading a native model over a masked column gets masks or a refusal, never a raw value', async () => {
    const lineage = await as('admin', 'GET', '/api/lineage/marts.tags');
    assert.equal(lineage.body.method, 'not_analysed');
    assert.deepEqual(lineage.body.depends_on, ['seeds.customers']);
    const added = await as('admin', 'POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'customers', column_name: 'name', method: 'redact' });
    assert.equal(added.status, 201, added.text);
    let masked = 0;
    for (const sql of ['SELECT id, tag FROM marts.tags', 'SELECT tag AS t FROM marts.tags', 'SELECT * FROM marts.tags', 'SELECT upper(tag) AS t FROM marts.tags', 'SELECT name FROM marts.paid', 'SELECT n FROM marts.tag_count']) {
      const r = await as('viewer', 'POST', '/api/query', { sql });
      assert.equal(NAMES.find((n) => r.text.includes(n)), undefined, `${sql}: ${r.text}`);
      if (r.status === 200 && r.body.rows.length) {
        masked++;
        if (!sql.includes('tag_count')) assert.ok(r.body.masked_columns.length > 0, `${sql}: ${r.text}`);
      } else assert.ok(r.status >= 400, `${sql}: ${r.text}`);
    }
    assert.ok(masked >= 2, 'plain selects of columns answer masked values');
    // Every column is masked (id too, as NULL: on 18.16 a wrapper, which the server refuses, so text only here; sorting by one would be refused too).
    const plain = await as('viewer', 'POST', '/api/query', { sql: 'SELECT tag FROM marts.tags' });
    assert.equal(plain.status, 200, plain.text);
    assert.deepEqual(plain.body.rows, [['***'], ['***'], ['***'], ['***']], plain.text);
    const filtered = await as('viewer', 'POST', '/api/query', { sql: "SELECT id FROM marts.tags WHERE tag = 'Ann'" });
    assert.equal(filtered.status, 403, filtered.text);
    const admin = await as('admin', 'POST', '/api/query', { sql: 'SELECT tag FROM marts.tags ORDER BY id' });
    assert.deepEqual(admin.body.rows.map((row: unknown[]) => row[0]), NAMES);
  });
});
