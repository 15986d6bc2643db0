/**
 * The golden corpus of DuckDB → ClickHouse transpilations (test/fixtures/clickhouse/corpus.json),
 * checked without a server: the transpiler's output for each pair, the cache by text, and the
 * constructs an 18.16 server cannot run found on DuckDB's parse tree (window functions, CTEs,
 * GROUP BY ALL, QUALIFY, table functions), each named; a 23.x server runs them.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { capabilitiesOf, chIdent, chLiteral } from '../../../plugins/target-clickhouse/client.js';
import { transpileCacheSize, transpileToClickHouse, unsupportedConstructs } from '../../../plugins/target-clickhouse/transpile.js';
import { rebuildSteps, incrementalSteps, type TargetModel } from '../../../plugins/target-clickhouse/materialize.js';
import { bootApp, makeProject, REPO_ROOT } from '../../helpers.js';

const corpus = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'test', 'fixtures', 'clickhouse', 'corpus.json'), 'utf8')) as Array<{ name: string; duckdb: string; clickhouse: string }>;

describe('DuckDB → ClickHouse corpus', () => {
  let app: App;
  before(async () => {
    app = await bootApp(makeProject());
  });
  after(() => app.close());

  for (const pair of corpus) {
    it(`transpiles: ${pair.name}`, async () => {
      assert.equal(await transpileToClickHouse(pair.duckdb, 'corpus'), pair.clickhouse);
    });
  }

  it('caches by text', async () => {
    const before = transpileCacheSize();
    await transpileToClickHouse(corpus[0]!.duckdb, 'corpus');
    assert.equal(transpileCacheSize(), before);
  });

  const constructs = async (sql: string, version: string) => {
    const parsed = await app.db.parse(sql);
    assert.ok(parsed.ok);
    return parsed.tree.statements.flatMap((s) => unsupportedConstructs(s.node, capabilitiesOf(version)));
  };

  it('names what 18.16 cannot run, and finds nothing in plain SQL', async () => {
    assert.deepEqual(await constructs('SELECT a, row_number() OVER (ORDER BY b) FROM (SELECT 1 AS a, 2 AS b)', '18.16.1'), ['window function row_number() OVER (...)']);
    assert.deepEqual(await constructs('WITH c AS (SELECT 1 AS x) SELECT * FROM c', '18.16.1'), ['WITH ... AS (SELECT ...) (a common table expression)']);
    assert.deepEqual(await constructs('SELECT a, count(*) FROM (SELECT 1 AS a) GROUP BY ALL', '18.16.1'), ['GROUP BY ALL']);
    assert.deepEqual(await constructs("SELECT * FROM read_csv('x.csv')", '24.3.1'), ["table function read_csv(...) (it reads files of the machine dp runs on)"]);
    assert.deepEqual(await constructs('SELECT a FROM (SELECT 1 AS a) GROUP BY a', '18.16.1'), []);
    assert.deepEqual(await constructs('WITH c AS (SELECT 1 AS x) SELECT x, row_number() OVER () FROM c GROUP BY ALL', '24.3.1'), []);
  });

  it('quotes identifiers and literals for ClickHouse', () => {
    assert.equal(chIdent('we`ird\\'), '`we\\`ird\\\\`');
    assert.equal(chLiteral("it's \\"), "'it\\'s \\\\'");
  });

  const model = (over: Partial<TargetModel>): TargetModel => ({
    model: 'marts.m', database: 'marts', name: 'm', materialized: 'table', strategy: 'append', uniqueKey: [], orderBy: null, shardingKey: null,
    select: 'SELECT 1 AS id', filter: null, columns: [{ name: 'id', type: 'UInt8' }], ...over,
  });
  const sqlOf = (steps: ReturnType<typeof rebuildSteps>) => steps.map((s) => ('sql' in s ? s.sql : `WAIT ${s.waitMutations.table}`));

  it('a table is built aside and swapped in with one RENAME (18.16 has no EXCHANGE TABLES)', () => {
    const steps = sqlOf(rebuildSteps(model({}), 'table', null));
    assert.ok(steps.includes('RENAME TABLE `marts`.`m` TO `marts`.`m__dp_old`, `marts`.`m__dp_new` TO `marts`.`m`'));
    assert.ok(steps.indexOf('INSERT INTO `marts`.`m__dp_new` (`id`) SELECT `id` FROM (SELECT 1 AS id) AS __dp_src') < steps.findIndex((s) => s.startsWith('RENAME')));
  });

  it('on a cluster: local tables ON CLUSTER, a Distributed table with the sharding key, locals swapped in the same RENAME', () => {
    const steps = sqlOf(rebuildSteps(model({ shardingKey: 'cityHash64(id)' }), 'table', 'c'));
    assert.ok(steps.some((s) => s.startsWith('CREATE TABLE `marts`.`m__dp_new__dp_local` ON CLUSTER `c` (`id` UInt8) ENGINE = MergeTree ORDER BY tuple()')));
    assert.ok(steps.includes('CREATE TABLE `marts`.`m__dp_new` ON CLUSTER `c` (`id` UInt8) ENGINE = Distributed(`c`, `marts`, `m__dp_local`, cityHash64(id))'));
    assert.ok(steps.includes('RENAME TABLE `marts`.`m` TO `marts`.`m__dp_old`, `marts`.`m__dp_new` TO `marts`.`m`, `marts`.`m__dp_local` TO `marts`.`m__dp_old__dp_local`, `marts`.`m__dp_new__dp_local` TO `marts`.`m__dp_local` ON CLUSTER `c`'));
  });

  it('merge is a ReplacingMergeTree read through FINAL; delete+insert waits for its mutation', () => {
    const merge = sqlOf(rebuildSteps(model({ materialized: 'incremental', strategy: 'merge', uniqueKey: ['id'], columns: [{ name: 'id', type: 'Nullable(Int64)' }] }), null, null));
    assert.ok(merge.includes('CREATE TABLE `marts`.`m__dp_data` (`id` Int64) ENGINE = ReplacingMergeTree ORDER BY (`id`)'));
    assert.ok(merge.includes('CREATE VIEW `marts`.`m` AS SELECT * FROM `marts`.`m__dp_data` FINAL'));
    const di = sqlOf(incrementalSteps(model({ materialized: 'incremental', strategy: 'delete+insert', uniqueKey: ['id'] }), null));
    const del = di.findIndex((s) => s.startsWith('ALTER TABLE `marts`.`m` DELETE WHERE (`id`) IN'));
    assert.ok(del > 0);
    assert.equal(di[del + 1], 'WAIT m');
  });
});
