/**
 * Models at scale:
 * - discovery + DAG of a generated 10,000-model project (every model's SQL distinct, two references
 *   each): first ever (no parse cache: reading, hashing and parsing every file, resolving
 *   references, ordering), cold in a new engine with the parse cache on disk (what every CLI
 *   command pays when few files changed), and cached in the same engine. Wall time and CPU time
 *   (process.cpuUsage: all threads, DuckDB's included), which holds better under load;
 * - an incremental model over a 10,000,000-row source: a run that adds 1% new rows (100,000,
 *   found by incremental_filter, merged by unique_key) against a full rebuild of the same model
 *   (--full-refresh), alternating rounds so both see the same machine load.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { App } from '../kernel/app.js';
import type { ModelsService } from '../sdk/index.js';
import type { BenchResult } from './util.js';

function project(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-scale-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\nplugins:\n  disable: [quality]\n');
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

/** Wall and CPU milliseconds (all threads of the process) of fn. */
async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; cpu: number; value: T }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  return { ms, cpu: (cpu.user + cpu.system) / 1000, value };
}

async function discovery10k(): Promise<BenchResult[]> {
  const files: Record<string, string> = {};
  const count = 10_000;
  for (let i = 0; i < count; i++) {
    const schema = `layer${Math.floor(i / 500)}`;
    const ref = (k: number) => `layer${Math.floor(k / 500)}.m${k}`;
    // Two references per model spread over all earlier models, so every file's SQL is distinct
    // (the parser sees 10,000 different statements, as in a real project).
    const sql =
      i < 50
        ? `SELECT range AS id, range % 10 AS g FROM range(10)`
        : `WITH a AS (SELECT id, g FROM ${ref(Math.floor(i * ((i * 0.6180339887) % 1)))})\nSELECT a.id, a.g + b.g AS g FROM a JOIN ${ref(i - 1 - ((i * 7919) % 50))} AS b USING (id)`;
    files[`transform/${schema}/m${i}.sql`] = `-- @config materialized=table, schema=${schema}\n${sql}\n`;
  }
  const root = project(files);
  const discover = async (app: App) => {
    const models = app.services.get<ModelsService>('models');
    const list = await models.list();
    const dag = await models.dag();
    if (list.length !== count || dag.edges.length < count) throw new Error(`unexpected graph: ${list.length} models, ${dag.edges.length} edges`);
  };
  const boot = async () => {
    const app = await App.boot({ projectRoot: root });
    await app.start();
    // The database opens on first use: open it first so that only discovery and the DAG are timed.
    await app.db.value('SELECT 1');
    return app;
  };
  try {
    const first = await boot();
    let firstEver: Awaited<ReturnType<typeof timed>>;
    let cached: Awaited<ReturnType<typeof timed>>;
    try {
      firstEver = await timed(() => discover(first));
      cached = await timed(() => discover(first));
    } finally {
      await first.close();
    }
    const second = await boot();
    let cold: Awaited<ReturnType<typeof timed>>;
    try {
      cold = await timed(() => discover(second));
    } finally {
      await second.close();
    }
    return [
      { name: 'discovery + DAG, 10,000 models, first ever (no parse cache)', value: firstEver.ms, unit: 'ms' },
      { name: 'the same, CPU time (all threads)', value: firstEver.cpu, unit: 'ms' },
      { name: 'discovery + DAG, 10,000 models, cold (new engine, parse cache on disk)', value: cold.ms, unit: 'ms', target: '< 1000 ms', ok: cold.ms < 1000 },
      { name: 'the same, CPU time (all threads)', value: cold.cpu, unit: 'ms', target: '< 1000 ms', ok: cold.cpu < 1000 },
      { name: 'discovery + DAG, 10,000 models (cached, same engine)', value: cached.ms, unit: 'ms' },
    ];
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function incremental10m(): Promise<BenchResult[]> {
  const ROWS = 10_000_000;
  const STEP = ROWS / 100;
  const root = project({
    'transform/marts/events_incremental.sql': `-- @config materialized=incremental, schema=marts, unique_key=id, incremental_strategy=merge
-- @config incremental_filter="id > (SELECT coalesce(max(id), -1) FROM {{ this }})"
SELECT id, id % 1000 AS customer_id, (id * 31) % 997 AS amount, 'e' || (id % 7) AS kind FROM raw.events
`,
  });
  const app = await App.boot({ projectRoot: root });
  await app.start();
  try {
    const models = app.services.get<ModelsService>('models');
    await app.db.run(`CREATE SCHEMA raw; CREATE TABLE raw.events AS SELECT range AS id FROM range(${ROWS})`);
    let next = ROWS;
    const first = await models.transform({});
    if (first.status !== 'success') throw new Error(JSON.stringify(first.results));
    const addOnePercent = async () => {
      await app.db.run(`INSERT INTO raw.events SELECT range AS id FROM range(${next}, ${next + STEP})`);
      next += STEP;
    };
    const incremental = async () => {
      await addOnePercent();
      const t = performance.now();
      const s = await models.transform({});
      const ms = performance.now() - t;
      if (s.status !== 'success' || s.results[0]!.extras?.rows_applied !== STEP) throw new Error(`incremental run: ${JSON.stringify(s.results)}`);
      return ms;
    };
    const full = async () => {
      const t = performance.now();
      const s = await models.transform({ fullRefresh: true });
      const ms = performance.now() - t;
      if (s.status !== 'success') throw new Error(`full refresh: ${JSON.stringify(s.results)}`);
      return ms;
    };
    const inc: number[] = [];
    const reb: number[] = [];
    for (let i = 0; i < 3; i++) {
      inc.push(await incremental());
      reb.push(await full());
    }
    const rows = Number(await app.db.value('SELECT count(*) FROM marts.events_incremental'));
    if (rows !== next) throw new Error(`the model holds ${rows} rows, the source ${next}`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const i = median(inc);
    const f = median(reb);
    return [
      { name: 'incremental run adding 1% (100,000 rows) to a 10,000,000-row model, merge (median of 3)', value: i, unit: 'ms' },
      { name: 'full rebuild of the same model, --full-refresh (median of 3)', value: f, unit: 'ms' },
      { name: 'incremental speed-up over full rebuild', value: f / i, unit: 'x', target: '>= 20', ok: f / i >= 20 },
    ];
  } finally {
    await app.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

export default async function run(): Promise<BenchResult[]> {
  if (process.env.DP_BENCH_MODELS_SCALE === 'discovery') return discovery10k();
  return [...(await discovery10k()), ...(await incremental10m())];
}
