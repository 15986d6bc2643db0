import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AFTER_MODEL_BUILD, AFTER_TRANSFORM, BEFORE_TRANSFORM, type ModelsService, type TransformSummary } from '../../../sdk/index.js';
import type { App } from '../../../kernel/app.js';
import { bootApp, makeProject } from '../../helpers.js';

const statuses = (s: TransformSummary) => Object.fromEntries(s.results.map((r) => [r.model, r.status]));

describe('transform engine', () => {
  let app: App;
  let models: ModelsService;
  let root: string;
  const write = (rel: string, text: string) => fs.writeFileSync(path.join(root, rel), text);
  before(async () => {
    root = makeProject({
      'seeds/items.csv': 'id,price,sold_on\n1,2.5,2024-01-01\n2,4.0,2024-01-02\n3,1.25,2024-02-01\n',
      'transform/staging/stg_items.sql': '-- @config materialized=view, schema=staging\nSELECT id, price, sold_on FROM seeds.items\n',
      'transform/marts/totals.sql': '-- @config materialized=table, schema=marts\nSELECT count(*) AS n, sum(price) AS revenue FROM staging.stg_items\n',
      'transform/marts/report.sql': '-- @config materialized=table, schema=marts\nSELECT n * 2 AS doubled FROM marts.totals\n',
      'transform/marts/standalone.sql': '-- @config materialized=table, schema=marts\nSELECT 42 AS answer\n',
    });
    app = await bootApp(root);
    models = app.services.get<ModelsService>('models');
    const seeds = await models.loadSeeds({});
    assert.deepEqual(seeds.map((s) => s.status), ['built']);
  });
  after(async () => app.close());

  it('builds every model in dependency order, emitting events, then skips unchanged models', async () => {
    const events: Array<{ type: string; model: unknown }> = [];
    const off = app.events.on('*', (e) => {
      if (e.type === 'model_start' || e.type === 'model_end') events.push({ type: e.type, model: e.payload.model });
    });
    const first = await models.transform({});
    off();
    assert.equal(first.status, 'success');
    assert.deepEqual(statuses(first), {
      'marts.standalone': 'built',
      'staging.stg_items': 'built',
      'marts.totals': 'built',
      'marts.report': 'built',
    });
    const order = first.results.map((r) => r.model);
    assert.ok(order.indexOf('staging.stg_items') < order.indexOf('marts.totals') && order.indexOf('marts.totals') < order.indexOf('marts.report'));
    assert.equal(events.filter((e) => e.type === 'model_start').length, 4);
    assert.equal(events.filter((e) => e.type === 'model_end').length, 4);
    assert.deepEqual(await app.db.all('SELECT n, revenue FROM marts.totals'), [{ n: 3, revenue: 7.75 }]);
    assert.equal(await app.db.value("SELECT table_type FROM information_schema.tables WHERE table_schema = 'staging' AND table_name = 'stg_items'"), 'VIEW');

    const second = await models.transform({});
    assert.ok(Object.values(statuses(second)).every((s) => s === 'skipped'));
    const forced = await models.transform({ force: true });
    assert.ok(Object.values(statuses(forced)).every((s) => s === 'built'));
  });

  it('rebuilds a changed model and its downstream, and reacts to a reloaded seed', async () => {
    write('transform/marts/totals.sql', '-- @config materialized=table, schema=marts\nSELECT count(*) AS n, sum(price) AS revenue, max(sold_on) AS last FROM staging.stg_items\n');
    let s = await models.transform({});
    assert.deepEqual(statuses(s), { 'marts.standalone': 'skipped', 'staging.stg_items': 'skipped', 'marts.totals': 'built', 'marts.report': 'built' });
    write('seeds/items.csv', 'id,price,sold_on\n1,2.5,2024-01-01\n');
    assert.equal((await models.loadSeeds({}))[0].status, 'built');
    s = await models.transform({});
    assert.deepEqual(statuses(s), { 'marts.standalone': 'skipped', 'staging.stg_items': 'built', 'marts.totals': 'built', 'marts.report': 'built' });
    assert.equal(await app.db.value('SELECT doubled FROM marts.report'), 2);
  });

  it('selects models with name, +name and name+', async () => {
    const only = await models.transform({ targets: ['standalone'], force: true });
    assert.deepEqual(Object.keys(statuses(only)), ['marts.standalone']);
    const up = await models.transform({ targets: ['+marts.totals'], force: true });
    assert.deepEqual(Object.keys(statuses(up)).sort(), ['marts.totals', 'staging.stg_items']);
    const down = await models.transform({ targets: ['totals+'], force: true });
    assert.deepEqual(Object.keys(statuses(down)).sort(), ['marts.report', 'marts.totals']);
    await assert.rejects(models.transform({ targets: ['nope+'] }), (e: any) => e.code === 'unknown_model');
  });

  it('keeps the previous data of a failing model and marks its downstream upstream_failed', async () => {
    const before = await app.db.all('SELECT * FROM marts.totals');
    write('transform/marts/totals.sql', '-- @config materialized=table, schema=marts\nSELECT no_such_column FROM staging.stg_items\n');
    const s = await models.transform({});
    assert.equal(s.status, 'error');
    const byModel = Object.fromEntries(s.results.map((r) => [r.model, r]));
    assert.equal(byModel['marts.totals'].status, 'error');
    assert.match(byModel['marts.totals'].error ?? '', /transform\/marts\/totals\.sql: .*no_such_column/);
    assert.equal(byModel['marts.report'].status, 'upstream_failed');
    assert.match(byModel['marts.report'].error ?? '', /marts\.totals/);
    assert.deepEqual(await app.db.all('SELECT * FROM marts.totals'), before);
    const recorded = await app.db.all<{ status: string }>(
      `SELECT status FROM _service.model_runs WHERE run_id = $1 AND model = 'marts.report'`,
      [s.run_id],
    );
    assert.deepEqual(recorded, [{ status: 'upstream_failed' }]);
    assert.equal(await app.db.value('SELECT status FROM _service.transform_runs WHERE run_id = $1', [s.run_id]), 'error');
    // A parse error is reported the same way, with the file and line.
    write('transform/marts/totals.sql', '-- @config materialized=table, schema=marts\nSELECT FROM WHERE\n');
    const p = await models.transform({ targets: ['totals'] });
    assert.equal(p.results[0].status, 'error');
    assert.match(p.results[0].error ?? '', /transform\/marts\/totals\.sql:2: /);
    write('transform/marts/totals.sql', '-- @config materialized=table, schema=marts\nSELECT count(*) AS n FROM staging.stg_items\n');
    assert.equal((await models.transform({})).status, 'success');
  });

  it('switches a model between view and table', async () => {
    write('transform/marts/standalone.sql', '-- @config materialized=view, schema=marts\nSELECT 43 AS answer\n');
    assert.equal(statuses(await models.transform({ targets: ['standalone'] }))['marts.standalone'], 'built');
    assert.equal(await app.db.value("SELECT table_type FROM information_schema.tables WHERE table_schema = 'marts' AND table_name = 'standalone'"), 'VIEW');
    write('transform/marts/standalone.sql', '-- @config materialized=table, schema=marts\nSELECT 44 AS answer\n');
    await models.transform({ targets: ['standalone'] });
    assert.equal(await app.db.value("SELECT table_type FROM information_schema.tables WHERE table_schema = 'marts' AND table_name = 'standalone'"), 'BASE TABLE');
    assert.equal(await app.db.value('SELECT answer FROM marts.standalone'), 44);
  });

  it('records the state of a model whose SQL ends in a line comment or holds quotes (state goes in the same text as the build)', async () => {
    write('transform/marts/commented.sql', "-- @config materialized=table, schema=marts\nSELECT 'it''s' AS said, ';' AS sep -- trailing comment, no newline");
    const first = await models.transform({ targets: ['marts.commented'] });
    assert.equal(first.status, 'success', JSON.stringify(first.results));
    assert.deepEqual(await app.db.all('SELECT said, sep FROM marts.commented'), [{ said: "it's", sep: ';' }]);
    const state = await app.db.all<{ kind: string; materialized: string }>("SELECT kind, materialized FROM _service.model_state WHERE name = 'marts.commented'");
    assert.deepEqual(state, [{ kind: 'model', materialized: 'table' }]);
    assert.deepEqual(statuses(await models.transform({ targets: ['marts.commented'] })), { 'marts.commented': 'skipped' });
    fs.rmSync(path.join(root, 'transform/marts/commented.sql'));
    await app.db.run('DROP TABLE marts.commented');
  });

  it('runs the hooks: afterModelBuild may flag assertion_failed without failing the run', async () => {
    const seen: string[] = [];
    app.hookPoint(BEFORE_TRANSFORM)!.tapPromise('test-before', async (run) => {
      seen.push(`before:${run.runId}`);
    });
    app.hookPoint(AFTER_MODEL_BUILD)!.tapPromise('test-flag', async (b) => {
      if (b.model === 'marts.report' && b.status === 'built') b.status = 'assertion_failed';
    });
    app.hookPoint(AFTER_TRANSFORM)!.tapPromise('test-after', async (run) => {
      seen.push(`after:${run.status}:${run.results.length}`);
    });
    const s = await models.transform({ targets: ['report'], force: true });
    assert.equal(s.status, 'success');
    assert.equal(s.results[0].status, 'assertion_failed');
    assert.deepEqual(seen, [`before:${s.run_id}`, 'after:success:1']);
  });
});

describe('seeds', () => {
  let app: App;
  let models: ModelsService;
  let root: string;
  before(async () => {
    root = makeProject({
      'seeds/people.csv': 'id,name,born,score\n1,Ada,1815-12-10,9.5\n2,Alan,1912-06-23,8.25\n',
      'seeds/blank.csv': '\n  \n',
    });
    app = await bootApp(root);
    models = app.services.get<ModelsService>('models');
  });
  after(async () => app.close());

  it('loads CSVs with detected types, the empty-file rule, then skips unchanged files', async () => {
    const first = await models.loadSeeds({});
    assert.deepEqual(first.map((r) => [r.seed, r.status, r.rows]), [
      ['seeds.blank', 'built', 0],
      ['seeds.people', 'built', 2],
    ]);
    const types = await app.db.all<{ column_name: string; data_type: string }>(
      "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'seeds' AND table_name = 'people' ORDER BY ordinal_position",
    );
    assert.deepEqual(types.map((t) => t.data_type), ['BIGINT', 'VARCHAR', 'DATE', 'DOUBLE']);
    assert.deepEqual(
      await app.db.all("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'seeds' AND table_name = 'blank'"),
      [{ column_name: 'empty_file', data_type: 'BOOLEAN' }],
    );
    const again = await models.loadSeeds({});
    assert.deepEqual(again.map((r) => r.status), ['skipped', 'skipped']);
    const forced = await models.loadSeeds({ force: true, targets: ['people'] });
    assert.deepEqual(forced.map((r) => [r.seed, r.status]), [['seeds.people', 'built']]);
    fs.appendFileSync(path.join(root, 'seeds/people.csv'), '3,Grace,1906-12-09,9.75\n');
    const changed = await models.loadSeeds({});
    assert.deepEqual(changed.map((r) => r.status), ['skipped', 'built']);
    assert.equal(await app.db.value('SELECT count(*) FROM seeds.people'), 3);
  });

  it('loads into another schema and rejects unknown seeds and bad schema names', async () => {
    const r = await models.loadSeeds({ schema: 'reference', targets: ['people'] });
    assert.deepEqual(r.map((x) => [x.seed, x.status]), [['reference.people', 'built']]);
    assert.equal(await app.db.value('SELECT count(*) FROM reference.people'), 3);
    await assert.rejects(models.loadSeeds({ targets: ['nope'] }), (e: any) => e.code === 'unknown_seed');
    await assert.rejects(models.loadSeeds({ schema: 'bad-schema' }), (e: any) => e.code === 'invalid_schema');
  });
});
