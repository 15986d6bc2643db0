import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelInfo, ModelLineage } from '../../../sdk/index.js';
import { buildFullDag, ingestTargets } from '../../../plugins/lineage/full-dag.js';
import { impactOf } from '../../../plugins/lineage/impact.js';

const src = (source_table: string, source_column: string) => ({ source_table, source_column });
const lin = (model: string, depends_on: string[], columns: ModelLineage['columns']): ModelLineage => ({ model, depends_on, columns, method: 'parser' });

// seeds.orders → staging.stg_orders → marts.revenue → marts.report; staging.stg_orders → marts.counts (star passthrough)
const LINEAGES = [
  lin('staging.stg_orders', ['seeds.orders'], {
    order_id: [src('seeds.orders', 'order_id')],
    amount: [src('seeds.orders', 'amount')],
    status: [src('seeds.orders', 'status')],
  }),
  lin('marts.revenue', ['staging.stg_orders'], {
    status: [src('staging.stg_orders', 'status')],
    revenue: [src('staging.stg_orders', 'amount')],
    loaded_at: [],
  }),
  lin('marts.report', ['marts.revenue'], {
    headline: [src('marts.revenue', 'revenue')],
    label: [src('marts.revenue', 'status')],
  }),
  lin('marts.passthrough', ['staging.stg_orders'], { '*': [src('staging.stg_orders', '*')] }),
];

describe('impact analysis', () => {
  it('follows models two levels down and columns through lineage', () => {
    const r = impactOf('staging.stg_orders', undefined, LINEAGES);
    assert.deepEqual(r.downstream_models, ['marts.revenue', 'marts.passthrough', 'marts.report']);
    assert.deepEqual(r.impact_chain, {
      'staging.stg_orders': ['marts.revenue', 'marts.passthrough'],
      'marts.revenue': ['marts.report'],
      'marts.passthrough': [],
      'marts.report': [],
    });
    assert.deepEqual(r.affected_columns, [
      { model: 'marts.revenue', column: 'status' },
      { model: 'marts.revenue', column: 'revenue' },
      { model: 'marts.passthrough', column: '*' },
      { model: 'marts.report', column: 'headline' },
      { model: 'marts.report', column: 'label' },
    ]);
    assert.equal('column' in r, false);
  });

  it('narrows affected columns to what one column reaches, not every model edge', () => {
    const r = impactOf('staging.stg_orders', 'amount', LINEAGES);
    assert.equal(r.column, 'amount');
    assert.deepEqual(r.downstream_models, ['marts.revenue', 'marts.passthrough', 'marts.report']);
    assert.deepEqual(r.affected_columns, [
      { model: 'marts.revenue', column: 'revenue' },
      { model: 'marts.passthrough', column: 'amount' },
      { model: 'marts.report', column: 'headline' },
    ]);
    assert.deepEqual(impactOf('staging.stg_orders', 'order_id', LINEAGES).affected_columns, [{ model: 'marts.passthrough', column: 'order_id' }]);
  });

  it('answers a leaf model with nothing downstream', () => {
    assert.deepEqual(impactOf('marts.report', 'headline', LINEAGES), {
      model: 'marts.report',
      column: 'headline',
      downstream_models: [],
      affected_columns: [],
      impact_chain: { 'marts.report': [] },
    });
  });
});

describe('full DAG', () => {
  it('finds CREATE TABLE / INSERT INTO targets of a script, skipping temporary tables', () => {
    const text = `await db.run('CREATE TABLE IF NOT EXISTS landing.events (id INT)');
      await db.run("CREATE OR REPLACE TEMP TABLE scratch AS SELECT 1");
      await db.run(\`INSERT INTO landing.events SELECT * FROM scratch\`);
      await db.run('insert into "crm"."Accounts" values (1)');
      await db.run('CREATE TABLE plain (x INT)');`;
    assert.deepEqual(ingestTargets(text), ['landing.events', 'main.plain', 'crm.Accounts']);
  });

  it('links sources, seeds, ingest scripts, imports, models and exposures', () => {
    const model = (full: string, materialized: 'table' | 'view', depends_on: string[]): ModelInfo => {
      const [schema, name] = full.split('.') as [string, string];
      return { name, schema, full_name: full, materialized, depends_on, path: `transform/${schema}/${name}.sql`, content_hash: 'x', sql: '', assertions: [], config: {} };
    };
    const dag = buildFullDag({
      models: [
        model('staging.stg_events', 'view', ['landing.events']),
        model('staging.stg_orders', 'view', ['seeds.orders', 'imports.refunds']),
        model('marts.daily', 'table', ['staging.stg_events', 'staging.stg_orders', 'crm.accounts']),
      ],
      seeds: [{ name: 'orders', schema: 'seeds', full_name: 'seeds.orders', path: 'seeds/orders.csv', content_hash: 'y' }],
      sources: [{ name: 'raw_events', schema: 'landing', tables: [{ name: 'events' }] }],
      exposures: [{ name: 'dashboard', depends_on: ['marts.daily'] }],
      ingestScripts: [{ path: 'ingest/events.ts', text: `db.run('INSERT INTO landing.events VALUES (1)')` }],
      importTables: ['imports.refunds'],
    });
    const types = Object.fromEntries(dag.nodes.map((n) => [n.id, n.type]));
    assert.deepEqual(types, {
      'staging.stg_events': 'view',
      'staging.stg_orders': 'view',
      'marts.daily': 'table',
      'seeds.orders': 'seed',
      'landing.events': 'source',
      'imports.refunds': 'import',
      'ingest/events.ts': 'ingest',
      'crm.accounts': 'source',
      'exposure:dashboard': 'exposure',
    });
    assert.equal(dag.nodes.find((n) => n.id === 'crm.accounts')?.declared, false);
    assert.deepEqual(
      dag.edges.map((e) => `${e.source} -> ${e.target}`),
      [
        'ingest/events.ts -> landing.events',
        'landing.events -> staging.stg_events',
        'seeds.orders -> staging.stg_orders',
        'imports.refunds -> staging.stg_orders',
        'staging.stg_events -> marts.daily',
        'staging.stg_orders -> marts.daily',
        'crm.accounts -> marts.daily',
        'marts.daily -> exposure:dashboard',
      ],
    );
  });
});
