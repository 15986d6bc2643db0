// Mixed load on a real `dp serve` (issue 34 item 5): how a small interactive query fares while a
// transform and a connector sync run, with SSE subscribers, Yjs collaboration clients and MCP
// calls beside it. Measured from outside, as the issue did:
//   alone  - the small query (a 10-row range of a 100k-row table) from QCLIENTS clients, nothing else
//   load   - the same query while: a forced transform of MODELS models, a csv connector sync of
//            CSV_ROWS rows (a generated file in the project, read by DuckDB), SSE subscribers on
//            /api/transform/events and /api/stream/events, COLLAB Yjs clients typing into one
//            notebook (the real protocol client, in a child process), MCP `query` calls
//   /api/health alongside both: no DuckDB call, so its latency is the event loop's alone.
// RSS of the engine process (the child of `dp serve` that holds the database) before, peak, and
// after the load settles; ROUNDS load rounds, so growth that repeats is told from a cache that
// fills once. Needs a build. Usage: node bench/mixed-load.mjs [repo]
//   PROF=<folder> writes CPU profiles of dp serve's processes there.
//   env: MODELS=200 MODEL_ROWS=100000 CSV_ROWS=2000000 COLLAB=30 SSE=20 QCLIENTS=4 MCP=2 ALONE_S=10 ROUNDS=2 SETTLE_S=8
import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { childPids } from '../scripts/proc-cpu.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const env = (name, dflt) => Number(process.env[name] ?? dflt);

// The collaboration clients run in a child process (their CPU is not the server's, nor this
// process's timing loop's): `node mixed-load.mjs --collab <json>`.
if (process.argv[2] === '--collab') {
  const job = JSON.parse(process.argv[3]);
  const dist = (p) => pathToFileURL(path.join(job.repo, 'dist', p)).href;
  const { connect } = await import(dist('test/plugins/notebooks/collaboration-support.js'));
  const { TEXT_CONTENT } = await import(dist('plugins/notebooks/collaboration/protocol.js'));
  const clients = Array.from({ length: job.clients }, () => connect(job.url, job.doc));
  await Promise.all(clients.map((c) => c.whenSynced()));
  process.send({ synced: true });
  // Each client types a character every second, staggered, until told to stop.
  const timers = clients.map((c, i) =>
    setTimeout(() => {
      timers[i] = setInterval(() => {
        const text = c.doc.getText(TEXT_CONTENT);
        text.insert(Math.floor(Math.random() * (text.length + 1)), String.fromCharCode(97 + (i % 26)));
      }, 1000);
    }, (i * 1000) / job.clients),
  );
  process.on('message', async () => {
    for (const t of timers) {
      clearInterval(t);
      clearTimeout(t);
    }
    // The last keystrokes still travel: converged is one text at every client within 10 s.
    const lengths = () => new Set(clients.map((c) => c.doc.getText(TEXT_CONTENT).toString()));
    for (let waited = 0; lengths().size > 1 && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    const texts = new Set([...lengths()].map((t) => t.length));
    for (const c of clients) c.destroy();
    process.send({ done: true, lengths: [...texts] }, () => process.exit(0));
  });
} else {
  await main();
}

async function main() {
  const repo = path.resolve(process.argv[2] ?? path.join(here, '..'));
  const MODELS = env('MODELS', 200);
  const MODEL_ROWS = env('MODEL_ROWS', 100_000);
  const CSV_ROWS = env('CSV_ROWS', 2_000_000);
  const COLLAB = env('COLLAB', 30);
  const SSE = env('SSE', 20);
  const QCLIENTS = env('QCLIENTS', 4);
  const MCP = env('MCP', 2);
  const ALONE_S = env('ALONE_S', 10);
  const ROUNDS = env('ROUNDS', 2);
  const SETTLE_S = env('SETTLE_S', 8);
  const { DuckDBInstance } = await import(pathToFileURL(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js')).href);

  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-mixed-load-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: mixed\ndatabase:\n  path: mixed.duckdb\n');
  // Layered models as in bench/models.bench.ts: bases over range(), then joins of two earlier ones.
  const bases = Math.max(1, Math.round(MODELS / 10));
  for (let i = 0; i < MODELS; i++) {
    const schema = `layer${Math.floor(i / 100)}`;
    const dir = path.join(root, 'transform', schema);
    fs.mkdirSync(dir, { recursive: true });
    const ref = (k) => `layer${Math.floor(k / 100)}.m${k}`;
    const sql =
      i < bases
        ? `SELECT range AS id, range % 10 AS g, (range * ${i + 1}) % 97 AS v FROM range(${MODEL_ROWS})`
        : `WITH a AS (SELECT id, g, v FROM ${ref((i * 7919) % i)})\nSELECT a.id, a.g, a.v + b.v AS v FROM a JOIN ${ref((i * 104729 + 13) % i)} AS b USING (id)`;
    fs.writeFileSync(path.join(dir, `m${i}.sql`), `-- @config materialized=table, schema=${schema}\n${sql}\n`);
  }
  fs.mkdirSync(path.join(root, 'notebooks'));
  fs.writeFileSync(path.join(root, 'notebooks/shared.sql'), '-- typed together\n');
  fs.mkdirSync(path.join(root, 'data/source'), { recursive: true });
  {
    // The small query's table, and the sync's source file, made before the server holds the database.
    const inst = await DuckDBInstance.create(path.join(root, 'mixed.duckdb'));
    const c = await inst.connect();
    await c.run("CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, i * 1.5 AS amount FROM range(100000) t(i)");
    const csv = path.join(root, 'data/source/events.csv').replaceAll("'", "''");
    await c.run(
      `COPY (SELECT i AS id, 'user' || (i % 5000) AS user_name, 'event ' || (i % 37) AS kind, i * 0.25 AS amount, TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS at FROM range(${CSV_ROWS}) t(i)) TO '${csv}' (HEADER)`,
    );
    c.closeSync();
    inst.closeSync();
  }

  const dpJs = path.join(repo, 'bin/dp.js');
  // PROF=<folder>: a CPU profile of the supervisor and of the engine (fork passes the flags on), written at exit.
  const prof = process.env.PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.PROF)}`] : [];
  const child = spawn(process.execPath, [...prof, dpJs, 'serve', '--no-scheduler', '--project', root, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DP_LOG_SILENT: '1' } });
  // A failed run leaves nothing behind: the engine goes with its supervisor's SIGTERM, the clients with their parent.
  const children = new Set();
  process.on('exit', () => {
    for (const c of children) c.kill('SIGKILL');
    child.kill('SIGTERM');
  });
  const base = await new Promise((res, rej) => {
    child.on('exit', (code) => rej(new Error(`dp serve exited (${code}) before listening`)));
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]);
    });
  });
  // The transform and the sync answer when done: no 300 s header timeout on a loaded machine.
  const { Agent } = await import(pathToFileURL(path.join(repo, 'node_modules/undici/index.js')).href);
  const patient = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  const call = async (method, url, body, headers = {}) => {
    const r = await fetch(`${base}${url}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body), dispatcher: patient });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${url} answered ${r.status}: ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : null;
  };

  // The engine process is the child of the supervisor; its RSS is what the issue measured.
  const enginePid = () => childPids(child.pid)[0];
  const rssMb = (pid) => {
    try {
      return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
    } catch {
      return 0;
    }
  };
  const engine = enginePid();

  await call('POST', '/api/connectors/setup', {
    connector_type: 'csv',
    connection_name: 'source',
    config: { path: 'data/source' },
    tables: [{ name: 'events', cdc_mode: 'full_refresh' }],
    target_schema: 'raw',
  });

  const SQL = 'SELECT id, name, amount FROM bench_t WHERE id BETWEEN $lo AND $lo + 9 ORDER BY id';
  const quantile = (xs, q) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN;
  };
  /** QCLIENTS small-query clients and one health prober, until `until()` says stop. */
  async function probe(until) {
    const query = [];
    const health = [];
    let errors = 0;
    let i = 0;
    const queryClient = async () => {
      while (!until()) {
        const t = performance.now();
        const r = await fetch(`${base}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: SQL, params: { lo: (i++ * 37) % 99_990 } }) });
        await r.arrayBuffer();
        if (r.status === 200) query.push(performance.now() - t);
        else errors++;
      }
    };
    const healthClient = async () => {
      while (!until()) {
        const t = performance.now();
        const r = await fetch(`${base}/api/health`);
        await r.arrayBuffer();
        health.push(performance.now() - t);
        // About 20 probes a second: the prober itself is no load.
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await Promise.all([...Array.from({ length: QCLIENTS }, queryClient), healthClient()]);
    return { query, health, errors };
  }
  const summary = (name, p, extra = {}) => ({
    phase: name,
    queries: p.query.length,
    errors: p.errors,
    q_p50_ms: +quantile(p.query, 0.5).toFixed(1),
    q_p99_ms: +quantile(p.query, 0.99).toFixed(1),
    q_max_ms: +Math.max(...p.query).toFixed(0),
    health_p50_ms: +quantile(p.health, 0.5).toFixed(1),
    health_p99_ms: +quantile(p.health, 0.99).toFixed(1),
    ...extra,
  });

  // Warm-up: the query's plan and the server's first requests.
  for (let i = 0; i < 50; i++) await call('POST', '/api/query', { sql: SQL, params: { lo: i } });
  const rows = [];
  const rss = { start: rssMb(engine) };
  process.stderr.write(`dp serve up (engine pid ${engine}, ${rss.start.toFixed(0)} MB); alone for ${ALONE_S} s\n`);
  {
    const stopAt = performance.now() + ALONE_S * 1000;
    rows.push(summary('alone', await probe(() => performance.now() > stopAt)));
  }

  for (let round = 1; round <= ROUNDS; round++) {
    const before = rssMb(engine);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(engine))), 100);
    // Collaboration clients, synced before the work starts.
    const collab = fork(new URL(import.meta.url).pathname, ['--collab', JSON.stringify({ repo, url: base, doc: 'notebooks/shared.sql', clients: COLLAB })], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.add(collab);
    collab.once('exit', () => children.delete(collab));
    await new Promise((res, rej) => {
      collab.once('message', res);
      collab.once('exit', (code) => rej(new Error(`collaboration clients exited (${code})`)));
    });
    // SSE subscribers: read and discard.
    const sseAbort = new AbortController();
    let sseBytes = 0;
    const sse = Array.from({ length: SSE }, (_, n) =>
      fetch(`${base}${n % 2 ? '/api/stream/events' : '/api/transform/events'}`, { signal: sseAbort.signal })
        .then(async (r) => {
          for await (const chunk of r.body) sseBytes += chunk.length;
        })
        .catch(() => undefined),
    );
    let working = true;
    let mcpCalls = 0;
    const mcp = Array.from({ length: MCP }, async (_, n) => {
      let id = 0;
      while (working) {
        const body = n % 2
          ? { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'list_models', arguments: {} } }
          : { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'query', arguments: { sql: 'SELECT g, count(*) AS n FROM layer0.m0 GROUP BY g ORDER BY g' } } };
        const r = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(body) });
        await r.arrayBuffer();
        mcpCalls++;
      }
    });
    process.stderr.write(`round ${round}: ${COLLAB} collaboration clients synced; transform and sync start\n`);
    const t0 = performance.now();
    const work = Promise.all([
      call('POST', '/api/transform', { force: true }).then((r) => ({ transform_s: (performance.now() - t0) / 1000, built: r.results?.filter?.((x) => x.status === 'success').length ?? r.succeeded ?? '?' })),
      call('POST', '/api/connectors/sync/source', {}).then((r) => ({ sync_s: (performance.now() - t0) / 1000, synced: r.results?.[0]?.rows_synced })),
    ]).finally(() => (working = false));
    const p = await probe(() => !working);
    const [transform, sync] = await work;
    await Promise.all(mcp);
    sseAbort.abort();
    await Promise.all(sse);
    const collabDone = new Promise((res) => collab.once('message', res));
    collab.send('stop');
    const { lengths } = await collabDone;
    clearInterval(sampler);
    // Settled: nothing sent for SETTLE_S seconds.
    await new Promise((r) => setTimeout(r, SETTLE_S * 1000));
    const after = rssMb(engine);
    rows.push(
      summary(`load ${round}`, p, {
        transform_s: +transform.transform_s.toFixed(1),
        sync_s: +sync.sync_s.toFixed(1),
        mcp_calls: mcpCalls,
        sse_kb: Math.round(sseBytes / 1024),
        collab_converged: lengths.length === 1,
        rss_before_mb: Math.round(before),
        rss_peak_mb: Math.round(peak),
        rss_after_mb: Math.round(after),
      }),
    );
    process.stderr.write(`round ${round}: ${JSON.stringify(rows.at(-1))}\n`);
  }
  const tree = Number(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
  console.table(rows);
  console.log(
    `MODELS=${MODELS} MODEL_ROWS=${MODEL_ROWS} CSV_ROWS=${CSV_ROWS} COLLAB=${COLLAB} SSE=${SSE} QCLIENTS=${QCLIENTS} MCP=${MCP}; engine RSS at start ${rss.start.toFixed(0)} MB (supervisor ${tree.toFixed(0)} MB); ${os.cpus().length} cores, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}, node ${process.version}`,
  );
  child.kill('SIGTERM');
  await new Promise((r) => (child.exitCode !== null ? r() : child.on('exit', r)));
  fs.rmSync(root, { recursive: true, force: true });
}
