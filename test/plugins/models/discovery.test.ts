import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ModelsService } from '../../../sdk/index.js';
import { bootApp, makeProject } from '../../helpers.js';
import type { App } from '../../../kernel/app.js';

const model = (config: string, sql: string) => `-- @config ${config}\n${sql}\n`;

async function withApp<T>(files: Record<string, string>, fn: (models: ModelsService, app: App, root: string) => Promise<T>): Promise<T> {
  const root = makeProject(files);
  const app = await bootApp(root);
  try {
    return await fn(app.services.get<ModelsService>('models'), app, root);
  } finally {
    await app.close();
  }
}

describe('models discovery and dependencies', () => {
  let app: App;
  let models: ModelsService;
  let root: string;
  before(async () => {
    root = makeProject({
      'seeds/customers.csv': 'id,name\n1,a\n',
      'transform/staging/stg_a.sql': model('materialized=view, schema=staging', 'SELECT id, name FROM seeds.customers'),
      'transform/staging/stg_b.sql': model('materialized=view, schema=staging', 'SELECT * FROM seeds.customers;'),
      // CTE that shadows nothing, joins, a subquery in WHERE and a set operation.
      'transform/marts/wide.sql': model(
        'materialized=table, schema=marts',
        `WITH base AS (SELECT id FROM staging.stg_a), other AS (SELECT id FROM base)
SELECT b.id FROM base b JOIN staging.stg_b s ON s.id = b.id
WHERE b.id IN (SELECT id FROM other)
UNION ALL SELECT id FROM (SELECT id FROM marts.nested_src) AS q`,
      ),
      'transform/marts/nested_src.sql': model('materialized=table, schema=marts', 'SELECT 1 AS id'),
      // @depends_on replaces extraction (the SQL reads a table function).
      'transform/marts/declared.sql': "-- @config materialized=table, schema=marts\n-- @depends_on stg_a, staging.stg_b\n-- @assert row_count > 0\n-- @assert \"sum(id) > 0\"\nSELECT 1 AS id FROM range(1)\n",
      // Legacy comment forms.
      'transform/marts/legacy.sql': '-- depends_on: marts.wide\n-- assert: unique(id)\nSELECT 2 AS id\n',
    });
    app = await bootApp(root);
    models = app.services.get<ModelsService>('models');
  });
  after(async () => app.close());

  it('lists models with parser-extracted dependencies (CTEs, joins, subqueries, set operations)', async () => {
    const list = await models.list();
    const byName = Object.fromEntries(list.map((m) => [m.full_name, m]));
    assert.deepEqual(byName['staging.stg_a'].depends_on, ['seeds.customers']);
    assert.deepEqual([...byName['marts.wide'].depends_on].sort(), ['marts.nested_src', 'staging.stg_a', 'staging.stg_b']);
    assert.equal(byName['marts.wide'].materialized, 'table');
    assert.equal(byName['staging.stg_a'].materialized, 'view');
    assert.equal(byName['marts.wide'].path, 'transform/marts/wide.sql');
    assert.match(byName['marts.wide'].content_hash, /^[0-9a-f]{64}$/);
  });

  it('uses @depends_on instead of extraction, and reads @assert', async () => {
    const m = await models.get('declared');
    assert.ok(m);
    assert.deepEqual(m.depends_on, ['staging.stg_a', 'staging.stg_b']);
    assert.deepEqual(m.assertions, ['row_count > 0', 'sum(id) > 0']);
    assert.equal(m.config.materialized, 'table');
  });

  it('reads the legacy depends_on: and assert: forms; default schema is the folder', async () => {
    const m = await models.get('marts.legacy');
    assert.ok(m);
    assert.deepEqual(m.depends_on, ['marts.wide']);
    assert.deepEqual(m.assertions, ['unique(id)']);
    assert.equal(m.schema, 'marts');
    assert.equal(m.materialized, 'table');
  });

  it('orders models topologically and builds the models-only DAG', async () => {
    const names = (await models.list()).map((m) => m.full_name);
    const before = (a: string, b: string) => assert.ok(names.indexOf(a) < names.indexOf(b), `${a} before ${b}`);
    before('staging.stg_a', 'marts.wide');
    before('marts.nested_src', 'marts.wide');
    before('marts.wide', 'marts.legacy');
    const dag = await models.dag();
    assert.equal(dag.nodes.length, 6);
    assert.ok(dag.nodes.every((n) => n.type === 'table' || n.type === 'view'));
    assert.ok(dag.edges.some((e) => e.source === 'staging.stg_a' && e.target === 'marts.wide'));
    assert.ok(!dag.edges.some((e) => e.source === 'seeds.customers'), 'seeds are not nodes of the models-only DAG');
  });

  it('rediscovers a changed file and lists seeds', async () => {
    fs.writeFileSync(path.join(root, 'transform/marts/nested_src.sql'), model('materialized=view, schema=marts', 'SELECT 2 AS id, 3 AS x'));
    assert.equal((await models.get('nested_src'))?.materialized, 'view');
    const seeds = await models.seeds();
    assert.deepEqual(seeds.map((s) => [s.full_name, s.path]), [['seeds.customers', 'seeds/customers.csv']]);
  });
});

describe('models discovery errors', () => {
  it('reports a cycle naming the files', async () => {
    await withApp(
      {
        'transform/a/x.sql': 'SELECT * FROM a.y',
        'transform/a/y.sql': 'SELECT * FROM a.z',
        'transform/a/z.sql': 'SELECT * FROM a.x',
      },
      async (models) => {
        await assert.rejects(models.list(), (e: any) => {
          assert.equal(e.code, 'dependency_cycle');
          assert.match(e.message, /transform\/a\/x\.sql/);
          assert.match(e.message, /a\.(\w) → a\.\w → a\.\w → a\.\1/);
          return true;
        });
      },
    );
  });

  it('reports unknown references with a hint, and accepts sources and existing tables', async () => {
    await withApp(
      {
        'transform/staging/s.sql': 'SELECT * FROM stg_missing JOIN landing.events USING (id) JOIN raw.existing USING (id)',
        'transform/staging/stg_missing.sql': 'SELECT 1 AS id',
        'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nsources:\n  - name: raw\n    schema: landing\n    tables:\n      - name: events\n',
      },
      async (models, app) => {
        await app.db.run('CREATE SCHEMA raw; CREATE TABLE raw.existing (id INTEGER)');
        await assert.rejects(models.list(), (e: any) => {
          assert.equal(e.code, 'unknown_reference');
          assert.match(e.message, /transform\/staging\/s\.sql: 'main\.stg_missing' \(did you mean staging\.stg_missing\?\)/);
          assert.doesNotMatch(e.message, /landing\.events|raw\.existing/);
          return true;
        });
      },
    );
  });

  it('reports two models with one name', async () => {
    await withApp({ 'transform/a/m.sql': 'SELECT 1', 'transform/b/m.sql': 'SELECT 2' }, async (models) => {
      await assert.rejects(models.list(), (e: any) => e.code === 'duplicate_model' && /transform\/a\/m\.sql and transform\/b\/m\.sql/.test(e.message));
    });
  });

  it('reports an invalid @config value naming the file', async () => {
    await withApp({ 'transform/a/m.sql': '-- @config materialized=ephemeral\nSELECT 1' }, async (models) => {
      await assert.rejects(models.list(), (e: any) => e.code === 'invalid_materialization' && /transform\/a\/m\.sql/.test(e.message) && /transform\/a\/m\.sql:1: materialized must be one of/.test(e.message));
    });
  });

  it('keeps a model with a syntax error in the list (transform and check report it)', async () => {
    await withApp({ 'transform/a/bad.sql': 'SELEC 1' }, async (models) => {
      const list = await models.list();
      assert.equal(list.length, 1);
      assert.deepEqual(list[0].depends_on, []);
    });
  });
});

describe('the model parse cache on disk (.dp/model-parse-cache.json)', () => {
  it('a new engine takes references from the cache for unchanged files, re-parses changed ones, and ignores a cache of another DuckDB version', async () => {
    const root = makeProject({
      'transform/staging/a.sql': model('materialized=table, schema=staging', 'SELECT 1 AS id'),
      'transform/staging/b.sql': model('materialized=table, schema=staging', 'SELECT 2 AS id'),
      'transform/marts/c.sql': model('materialized=table, schema=marts', 'SELECT id FROM staging.a'),
    });
    const cacheFile = path.join(root, '.dp/model-parse-cache.json');
    const depsOfC = async () => {
      const app = await bootApp(root);
      try {
        return (await app.services.get<ModelsService>('models').get('marts.c'))!.depends_on;
      } finally {
        await app.close();
      }
    };
    assert.deepEqual(await depsOfC(), ['staging.a']);
    const doc = JSON.parse(fs.readFileSync(cacheFile, 'utf8'));
    assert.equal(doc.format, 2);
    assert.equal(Object.keys(doc.entries).length, 3);
    // Point c's cached references at b: a new engine believes the cache (so it did not parse c).
    const cHash = Object.keys(doc.entries).find((h) => doc.entries[h].refs.some((r: { table: string }) => r.table === 'a'))!;
    doc.entries[cHash].refs = [{ schema: 'staging', table: 'b', location: null }];
    fs.writeFileSync(cacheFile, JSON.stringify(doc));
    assert.deepEqual(await depsOfC(), ['staging.b']);
    // Another DuckDB version: the whole cache is ignored and rewritten from the parser.
    fs.writeFileSync(cacheFile, JSON.stringify({ ...doc, duckdb: 'v0.0.0' }));
    assert.deepEqual(await depsOfC(), ['staging.a']);
    assert.notEqual(JSON.parse(fs.readFileSync(cacheFile, 'utf8')).duckdb, 'v0.0.0');
    // A changed file is parsed again (its content hash is new); its old entry is dropped.
    const tampered = JSON.parse(fs.readFileSync(cacheFile, 'utf8'));
    tampered.entries[cHash].refs = [{ schema: 'staging', table: 'b', location: null }];
    fs.writeFileSync(cacheFile, JSON.stringify(tampered));
    fs.writeFileSync(path.join(root, 'transform/marts/c.sql'), model('materialized=table, schema=marts', 'SELECT id FROM staging.a WHERE id > 0'));
    assert.deepEqual(await depsOfC(), ['staging.a']);
    assert.equal(JSON.parse(fs.readFileSync(cacheFile, 'utf8')).entries[cHash], undefined);
    // An unreadable cache is no error.
    fs.writeFileSync(cacheFile, '{not json');
    assert.deepEqual(await depsOfC(), ['staging.a']);
  });
});

describe('a discovery of more files than one parse chunk', () => {
  // 2,600 models: three chunks of 1,250 parse while the next files are read (discovery.ts PARSE_CHUNK).
  const MODELS = 2_600;
  let root: string;
  before(() => {
    const files: Record<string, string> = {};
    for (let i = 0; i < MODELS; i++) {
      const sql =
        i === 0
          ? 'SELECT 1 AS id'
          : // A CTE named like a model of another schema, and a reference to an earlier model (chunks apart for most).
            `WITH m${i} AS (SELECT id FROM layer.m${Math.floor(i / 2)})\nSELECT id FROM m${i} JOIN layer.m${i - 1} USING (id)`;
      files[`transform/layer/m${i}.sql`] = model('materialized=view, schema=layer', sql);
    }
    root = makeProject(files);
  });

  it('finds every reference, whichever chunk parsed it', async () => {
    const app = await bootApp(root);
    try {
      const models = app.services.get<ModelsService>('models');
      const list = await models.list();
      assert.equal(list.length, MODELS);
      const byName = new Map(list.map((m) => [m.full_name, m]));
      for (const i of [1, 2, 1249, 1250, 1251, 2500, MODELS - 1]) {
        assert.deepEqual([...byName.get(`layer.m${i}`)!.depends_on].sort(), [...new Set([`layer.m${Math.floor(i / 2)}`, `layer.m${i - 1}`])].sort(), `layer.m${i}`);
      }
      assert.equal((await models.dag()).edges.length, MODELS - 1 + list.filter((m) => m.depends_on.length === 2).length);
    } finally {
      await app.close();
    }
  });

  it('stops at a file it cannot read as a model while earlier chunks parse: the error names the file, nothing is left unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    // Sorted after every other file: the chunks before it are already parsing when it is read.
    fs.writeFileSync(path.join(root, 'transform/layer/zz-not-a-name.sql'), 'SELECT 1');
    // A new engine: no parse kept in memory, none on disk (the first test's cache is written later, if at all).
    fs.rmSync(path.join(root, '.dp/model-parse-cache.json'), { force: true });
    const app = await bootApp(root);
    try {
      await assert.rejects(app.services.get<ModelsService>('models').list(), (e: { code?: string; message?: string }) => e.code === 'invalid_model_name' && /zz-not-a-name/.test(e.message ?? ''));
      // Let any rejection that nobody handled surface before looking.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await app.close();
    }
  });
});
