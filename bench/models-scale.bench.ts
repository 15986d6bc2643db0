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
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
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

/** The checkout this bench was compiled from (dist/bench/ → the repository). */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SERVE_MODELS = 10_000;
const SOURCE_TABLES = 300;
const SOURCE_COLUMNS = 'id, customer_id, amount, status, created_at, note';

/**
 * A 10,000-model project shaped like a real one: 300 source tables (declared in project.yml and
 * present in the database), 1,500 staging models over them (renames, casts, filters), 6,000
 * intermediate models (CTE chains, joins of two or three upstream models, windows, CASE,
 * UNION ALL, `SELECT * EXCLUDE/REPLACE`) and 2,500 marts (aggregates over joins). References
 * spread over all earlier models of the layer below, so every body is distinct.
 */
export function servedProject(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-serve-'));
  const sources = Array.from({ length: SOURCE_TABLES }, (_, k) => `      - name: src_${k}`).join('\n');
  fs.writeFileSync(
    path.join(root, 'project.yml'),
    `name: bench\ndatabase:\n  path: bench.duckdb\nplugins:\n  disable: [quality]\nsources:\n  - name: raw\n    schema: raw\n    tables:\n${sources}\n`,
  );
  const STAGING = 1_500;
  const INTERMEDIATE = 6_000;
  const name = (i: number) => (i < STAGING ? `stg_${i}` : i < STAGING + INTERMEDIATE ? `int_${i}` : `mart_${i}`);
  const schema = (i: number) => (i < STAGING ? 'staging' : i < STAGING + INTERMEDIATE ? `intermediate_${i % 20}` : 'marts');
  const ref = (i: number) => `${schema(i)}.${name(i)}`;
  /** An earlier model, spread by a hash over [lo, hi). */
  const pick = (i: number, salt: number, lo: number, hi: number) => lo + ((i * 2654435761 + salt * 40503) % 4294967296) % Math.max(1, hi - lo);
  for (let i = 0; i < SERVE_MODELS; i++) {
    let sql: string;
    if (i < STAGING) {
      sql = `SELECT id, customer_id, CAST(amount AS DECIMAL(12, 2)) AS amount, lower(status) AS status, created_at, note
FROM raw.src_${i % SOURCE_TABLES}
WHERE created_at >= DATE '2020-01-01' + INTERVAL ${i % 365} DAY`;
    } else if (i < STAGING + INTERMEDIATE) {
      const lo = i < STAGING + 1_000 ? 0 : STAGING;
      const a = ref(pick(i, 1, lo, i));
      const b = ref(pick(i, 2, lo, i));
      const c = ref(pick(i, 3, 0, STAGING));
      switch (i % 5) {
        case 0:
          sql = `WITH base AS (SELECT id, customer_id, amount, status, created_at FROM ${a}),
  scaled AS (SELECT id, customer_id, amount * ${(i % 7) + 1} AS amount, status, created_at FROM base WHERE amount > ${i % 50}),
  tagged AS (SELECT s.*, x.note FROM scaled s LEFT JOIN ${c} x USING (id))
SELECT id, customer_id, amount, status, created_at, note FROM tagged`;
          break;
        case 1:
          sql = `SELECT a.id, a.customer_id,
  sum(a.amount) OVER (PARTITION BY a.customer_id ORDER BY a.created_at) AS amount,
  CASE WHEN b.status = 'completed' THEN a.status ELSE b.status END AS status, a.created_at, b.note
FROM ${a} a JOIN ${b} b ON a.id = b.id AND b.amount > ${i % 13}`;
          break;
        case 2:
          sql = `SELECT id, customer_id, amount, status, created_at, note FROM ${a}
UNION ALL
SELECT id, customer_id, amount, status, created_at, note FROM ${b} WHERE status <> 'x${i}'`;
          break;
        case 3:
          sql = `SELECT * EXCLUDE (status) REPLACE (amount + ${i % 11} AS amount), upper(status) AS status FROM ${a}`;
          break;
        default:
          sql = `WITH j AS (
  SELECT a.id, a.customer_id, a.amount + coalesce(b.amount, 0) AS amount, a.status, greatest(a.created_at, b.created_at) AS created_at, c.note
  FROM ${a} a LEFT JOIN ${b} b USING (id) JOIN ${c} c ON c.id = a.id
)
SELECT * FROM j WHERE id % ${(i % 9) + 2} = 0`;
      }
    } else {
      const a = ref(pick(i, 4, STAGING, STAGING + INTERMEDIATE));
      const b = ref(pick(i, 5, STAGING, STAGING + INTERMEDIATE));
      sql = `WITH orders AS (SELECT customer_id, amount, status, created_at FROM ${a}),
  customers AS (SELECT DISTINCT customer_id, note FROM ${b})
SELECT o.customer_id, c.note AS segment, date_trunc('month', o.created_at) AS month, o.status,
  count(*) AS orders, sum(o.amount) AS revenue, avg(o.amount) AS avg_amount_${i % 17}
FROM orders o JOIN customers c USING (customer_id)
GROUP BY ALL`;
    }
    const dir = path.join(root, 'transform', schema(i));
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `${name(i)}.sql`), `-- ${name(i)}: generated for the discovery bench\n-- @config materialized=${i % 4 === 0 ? 'view' : 'table'}, schema=${schema(i)}\n${sql}\n`);
  }
  return root;
}

export async function createSources(root: string): Promise<void> {
  const instance = await DuckDBInstance.create(path.join(root, 'bench.duckdb'));
  const conn = await instance.connect();
  const tables = Array.from(
    { length: SOURCE_TABLES },
    (_, k) => `CREATE TABLE raw.src_${k} AS SELECT range AS id, range % 100 AS customer_id, range * 1.5 AS amount, 'completed' AS status, TIMESTAMP '2024-01-01' AS created_at, 'n' AS note FROM range(10);`,
  );
  await conn.run(`CREATE SCHEMA raw; ${tables.join('\n')}`);
  conn.closeSync();
  instance.closeSync();
}

/** A child process's output, parsed as JSON; rejects on a non-zero exit. */
function childJson(args: string[]): Promise<{ ms: number; cpu: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${args.join(' ')} exited with ${code}`))));
  });
}

/** CPU ms of the `dp serve` engine (every thread, and its main thread alone), read from /proc. */
interface EngineCpu {
  all(): number;
  main(): number;
}

/** `dp serve` of a checkout (this one by default) on a random port; resolves once it listens. */
async function serve(root: string, repo = REPO): Promise<{ url: string; stop: () => Promise<void>; cpu: EngineCpu }> {
  const args = [...(process.env.DP_BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.DP_BENCH_PROF}`] : []), path.join(repo, 'bin', 'dp.js'), 'serve', '--no-scheduler', '--project', root, '--port', '0'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DP_LOG_SILENT: '1' } });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.on('exit', (code) => reject(new Error(`dp serve exited (${code}) before listening`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      child.removeAllListeners('exit');
      child.on('exit', () => resolve());
      child.kill('SIGTERM');
    });
  // `dp serve` is a supervisor and its engine; the engine does the work.
  const proc = (await import(path.join(REPO, 'scripts', 'proc-cpu.mjs'))) as {
    childPids(pid: number): number[];
    processCpuMs(pid: number): number;
    mainThreadCpuMs(pid: number): number;
  };
  const engine = proc.childPids(child.pid!)[0] ?? child.pid!;
  return { url, stop, cpu: { all: () => proc.processCpuMs(engine), main: () => proc.mainThreadCpuMs(engine) } };
}

/** Wall milliseconds of a GET and the size of its answer; throws unless 200. */
async function timedGet(url: string): Promise<{ ms: number; bytes: number; body: unknown }> {
  const t = performance.now();
  const res = await fetch(url);
  const text = await res.text();
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return { ms, bytes: text.length, body: JSON.parse(text) };
}

/**
 * First `/api/dag` and `/api/lineage` of a real `dp serve` on a new 10,000-model project, as the
 * issue measured them from outside: without a parse cache (the first start ever) and with the
 * one the first start left (a restart). Baseline in the same rounds: a bare Node process reading,
 * hashing and parsing the same files in one json_serialize_sql query (models-scale-bare.mjs).
 * With DP_BENCH_COMPARE=<another built checkout>, that checkout's `dp serve` is timed in the same
 * rounds on the same project, right after this one's, for a before/after in the same minutes.
 * The first `/api/dag` also reports the engine's CPU (all threads, and its main thread).
 */
async function serve10k(): Promise<BenchResult[]> {
  const root = servedProject();
  const rounds = Number(process.env.DP_BENCH_ROUNDS ?? 3);
  const checkouts = [{ label: 'dp serve', repo: REPO }];
  if (process.env.DP_BENCH_COMPARE) checkouts.push({ label: `dp serve of ${path.resolve(process.env.DP_BENCH_COMPARE)}`, repo: path.resolve(process.env.DP_BENCH_COMPARE) });
  try {
    await createSources(root);
    const bare: number[] = [];
    const times = checkouts.map(() => ({ firstDag: [] as number[], firstDagCpu: [] as number[], firstDagMainCpu: [] as number[], firstLineage: [] as number[], warmDag: [] as number[], warmLineage: [] as number[] }));
    let sizes = { dag: 0, lineage: 0 };
    for (let r = 0; r < rounds; r++) {
      bare.push((await childJson([path.join(REPO, 'bench', 'models-scale-bare.mjs'), root, REPO])).ms);
      for (const [c, { repo }] of checkouts.entries()) {
        const t = times[c]!;
        // A first start: neither discovery's parse cache nor lineage's results of the round before.
        for (const cache of ['model-parse-cache.json', 'lineage-cache.json']) fs.rmSync(path.join(root, '.dp', cache), { force: true });
        for (const first of [true, false]) {
          const server = await serve(root, repo);
          try {
            const cpu0 = server.cpu.all();
            const main0 = server.cpu.main();
            const dag = await timedGet(`${server.url}/api/dag`);
            const dagCpu = server.cpu.all() - cpu0;
            const dagMainCpu = server.cpu.main() - main0;
            const lineage = await timedGet(`${server.url}/api/lineage`);
            const nodes = (dag.body as { nodes: unknown[] }).nodes.length;
            const traced = (lineage.body as Array<{ method: string }>).filter((l) => l.method === 'parser').length;
            if (nodes < SERVE_MODELS || traced !== SERVE_MODELS) throw new Error(`dag has ${nodes} nodes, ${traced} models traced by the parser`);
            if (first) {
              t.firstDag.push(dag.ms);
              t.firstDagCpu.push(dagCpu);
              t.firstDagMainCpu.push(dagMainCpu);
              t.firstLineage.push(lineage.ms);
            } else {
              t.warmDag.push(dag.ms);
              t.warmLineage.push(lineage.ms);
            }
            sizes = { dag: dag.bytes, lineage: lineage.bytes };
          } finally {
            await server.stop();
          }
        }
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const b = median(bare);
    const results: BenchResult[] = [{ name: `bare: read + hash + parse the 10,000 files in one json_serialize_sql query (median of ${rounds})`, value: b, unit: 'ms' }];
    for (const [c, { label }] of checkouts.entries()) {
      const t = times[c]!;
      results.push(
        { name: `${label}, first /api/dag after start, no parse cache`, value: median(t.firstDag), unit: 'ms', target: '< 600 ms', ok: median(t.firstDag) < 600 },
        { name: 'the same / bare', value: median(t.firstDag) / b, unit: 'x' },
        { name: 'the same: engine CPU, all threads / main thread', value: median(t.firstDagCpu), unit: `ms / ${median(t.firstDagMainCpu)} ms` },
        { name: `${label}, then /api/lineage of every model, no lineage cache`, value: median(t.firstLineage), unit: 'ms', target: '< 1000 ms', ok: median(t.firstLineage) < 1000 },
        { name: `${label} restarted (parse and lineage caches on disk), first /api/dag`, value: median(t.warmDag), unit: 'ms' },
        { name: 'the same, then /api/lineage', value: median(t.warmLineage), unit: 'ms' },
      );
    }
    results.push({ name: 'answer sizes, /api/dag and /api/lineage', value: sizes.dag / 1e6, unit: `MB / ${(sizes.lineage / 1e6).toFixed(1)} MB` });
    return results;
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

export default async function run(): Promise<BenchResult[]> {
  const part = process.env.DP_BENCH_MODELS_SCALE;
  if (part === 'discovery') return discovery10k();
  if (part === 'serve') return serve10k();
  return [...(await serve10k()), ...(await discovery10k()), ...(await incremental10m())];
}
