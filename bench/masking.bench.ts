/**
 * Masking overhead:
 * - the rewrite of a 3-join query as the enforcer does it for a SQL text it has not seen: the
 *   parse (json_serialize_sql, not cached: a fresh text each call), the rewrite, and the new
 *   text (spliced into the original; json_deserialize_sql only for syntax the splice does not
 *   take). Measured twice: with qualified columns (masked where they are read, "late") and with
 *   `c.*` (the scans wrapped);
 * - what masking adds to the whole guarded path of /api/query for a new SQL text (read-only
 *   validation of the text as sent, the rewrite, validation of the rewritten text and the
 *   check of its masks), as the difference between a bound and an exempt caller;
 * - /api/query throughput with 5 active policies against none (the same SQL repeated),
 *   alternating rounds and taking medians;
 * - the read issue 35 measured: a one-table SELECT of seven columns, five masked (email, redact,
 *   phone, credit_card, hash), as a viewer of a server with auth, beside a bare Fastify + DuckDB
 *   route running the same SELECT unmasked; the two unmasked columns of that table; the same
 *   SELECT as an exempt admin; and a table without policies. Requests go one at a time through
 *   Fastify's inject, interleaved request by request (dp case, bare, next case...), and each is
 *   charged the process CPU time it took: load from other processes inflates both sides alike,
 *   so the ratio (bare CPU / dp CPU, the throughput ratio of a saturated core) stays readable on
 *   a busy machine. `node bench/masked-read.mjs` measures the same over real sockets and the
 *   real `dp serve --auth`.
 */
import { MethodCatalog } from '../plugins/masking/catalog.js';
import { MaskingEnforcer } from '../plugins/masking/enforce.js';
import { PolicyStore } from '../plugins/masking/policies.js';
import { planResultMarks, resolveMarks, type ScanColumns } from '../plugins/masking/result-columns.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import Fastify from 'fastify';
import { App } from '../kernel/app.js';
import { createServer } from '../kernel/http.js';
import type { Caller } from '../sdk/index.js';
import { makeProject, startServer } from '../test/helpers.js';
import { addBareQueryRoute, type BenchResult, throughput, timePerCall } from './util.js';

const JOINS = `FROM crm.customers c JOIN crm.orders o ON o.customer_id = c.id
  JOIN crm.payments p ON p.order_id = o.id JOIN crm.shipments s ON s.order_id = o.id`;
const JOIN3 = `SELECT c.name, c.email, o.amount, p.method, s.carrier, p.card, s.ip\n  ${JOINS}`;
const JOIN3_STAR = `SELECT c.*, o.amount, p.card, s.ip\n  ${JOINS}`;

export default async (): Promise<BenchResult[]> => [...(await oneTableReads()), ...(await rewrites())];

async function rewrites(): Promise<BenchResult[]> {
  const s = await startServer(makeProject({ 'project.yml': 'name: b\ndatabase:\n  path: b.duckdb\nmasking:\n  enforce_without_auth: true\n' }));
  try {
    await s.app.db.run(`CREATE SCHEMA crm;
      CREATE TABLE crm.customers AS SELECT i AS id, 'name' || i AS name, 'u' || i || '@example.com' AS email, '555-' || i AS phone, i * 100 AS salary FROM range(1000) t(i);
      CREATE TABLE crm.orders AS SELECT i AS id, i % 1000 AS customer_id, i * 1.5 AS amount FROM range(5000) t(i);
      CREATE TABLE crm.payments AS SELECT i AS order_id, 'card' AS method, '4111-1111-1111-' || i AS card FROM range(5000) t(i);
      CREATE TABLE crm.shipments AS SELECT i AS order_id, 'ups' AS carrier, '10.0.' || (i % 255) || '.1' AS ip FROM range(5000) t(i);`);
    const init = (sql: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql, limit: 100 }) });
    const query = 'SELECT c.name, c.email, c.phone, o.amount FROM crm.customers c JOIN crm.orders o ON o.customer_id = c.id LIMIT 100';
    const POLICIES = [
      ['customers', 'email', 'email'],
      ['customers', 'name', 'first_initial'],
      ['customers', 'phone', 'phone'],
      ['payments', 'card', 'credit_card'],
      ['shipments', 'ip', 'ip_address'],
    ];
    const setPolicies = async (on: boolean) => {
      if (on) {
        for (const [table, column, method] of POLICIES) {
          const r = await s.request('POST', '/api/masking/policies', { schema_name: 'crm', table_name: table, column_name: column, method });
          if (r.status !== 201) throw new Error(r.text);
        }
      } else {
        for (const p of (await s.request('GET', '/api/masking/policies')).body as Array<{ id: string }>) await s.request('DELETE', `/api/masking/policies/${p.id}`);
      }
    };
    // Rounds alternate between no policies and 5 active ones (medians), so machine noise hits both alike.
    const noneRuns: number[] = [];
    const maskedRuns: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const on of [false, true]) {
        await setPolicies(on);
        await throughput(`${s.url}/api/query`, init(query), 300, 4);
        (on ? maskedRuns : noneRuns).push(await throughput(`${s.url}/api/query`, init(query), 1500, 4));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    const none = median(noneRuns);
    const masked = median(maskedRuns);

    // The enforcer's own parse → rewrite → new text, bypassing every cache (a fresh SQL text each call).
    const catalog = new MethodCatalog();
    const store = new PolicyStore(() => s.app.db, catalog);
    await store.load();
    const silent = { info() {}, warn() {}, error() {}, debug() {} };
    const enforcer = new MaskingEnforcer({ db: s.app.db, clock: s.app.clock }, catalog, store, () => ({ enforceWithoutAuth: true }), silent);
    let n = 0;
    const viewer: Caller = { username: 'v', role: 'viewer', authenticated: true };
    const admin: Caller = { username: 'a', role: 'admin', authenticated: true };
    const rewrite = async (base: string, path: 'late' | 'spliced') => {
      const before = { ...enforcer.stats };
      let calls = 0;
      const ms = await timePerCall(async () => {
        calls++;
        const sql = `${base} LIMIT ${++n}`;
        const ctx = { sql, originalSql: sql, caller: viewer, purpose: 'query' as const, rowTransforms: [], notes: [], state: {} };
        await enforcer.beforeQuery(ctx);
        if (ctx.sql === sql) throw new Error('the 3-join query was not rewritten');
      }, 2000);
      const made = enforcer.stats[path] - before[path];
      if (made !== calls || enforcer.stats.deparsed || enforcer.stats.fallbacks) throw new Error(`the 3-join query did not take the ${path} path: ${JSON.stringify(enforcer.stats)}`);
      return ms;
    };
    const rewriteMs = await rewrite(JOIN3, 'late');
    const rewriteStarMs = await rewrite(JOIN3_STAR, 'spliced');

    // Which result columns were masked (`masked_columns`): traced once per new SQL text beside the
    // rewrite (its share of the rewrite above), then resolved once per result from the cached plan.
    const snap = await enforcer.relations.snapshot();
    const scan = (enforcer as unknown as { scanColumns: (...a: unknown[]) => ScanColumns }).scanColumns(snap, enforcer.bindingPolicies(viewer, store.all()));
    const trace = async (sql: string) => {
      const parsed = await s.app.db.parse(sql);
      if (!parsed.ok) throw new Error(parsed.error);
      const node = parsed.tree.statements[0].node;
      const marks = planResultMarks(node, scan, []);
      if (marks.kind !== 'traced' || !marks.columns.some((c) => c.policy)) throw new Error(`the 3-join query was not traced: ${JSON.stringify(marks)}`);
      const columns = marks.columns.map((c, i) => c.name ?? `c${i}`);
      return {
        plan: await timePerCall(() => planResultMarks(node, scan, []), 1000, 200),
        resolve: await timePerCall(() => resolveMarks(marks, columns), 500, 200),
      };
    };
    const traced = await trace(JOIN3);
    const tracedStar = await trace(JOIN3_STAR);

    // The kernel's guarded path (everything /api/query does before executing), new text each call,
    // for a bound viewer and an exempt admin, interleaved so machine noise hits both alike.
    const prepare = (caller: Caller) => () => s.app.queries.prepare({ sql: `${JOIN3} LIMIT ${++n}`, caller, purpose: 'query' });
    const bound: number[] = [];
    const exempt: number[] = [];
    for (let i = 0; i < 3; i++) {
      bound.push(await timePerCall(prepare(viewer), 700));
      exempt.push(await timePerCall(prepare(admin), 700));
    }
    const ratio = masked / none;
    return [
      { name: 'rewrite of a 3-join query, qualified columns (parse + rewrite + splice, uncached)', value: rewriteMs, unit: 'ms', target: '< 1 ms', ok: rewriteMs < 1 },
      { name: 'rewrite of a 3-join query, c.* (parse + rewrite + splice of wrappers, uncached)', value: rewriteStarMs, unit: 'ms', target: '< 1 ms', ok: rewriteStarMs < 1 },
      { name: 'masked_columns: tracing a new 3-join query, qualified columns / c.* (once per cached rewrite)', value: Math.max(traced.plan, tracedStar.plan), unit: 'ms' },
      {
        name: 'masked_columns: tracing / the rewrite of the same new query (worse of the two; a ratio, steady under load)',
        value: Math.max(traced.plan / rewriteMs, tracedStar.plan / rewriteStarMs),
        unit: 'x',
        target: '<= 0.1',
        ok: Math.max(traced.plan / rewriteMs, tracedStar.plan / rewriteStarMs) <= 0.1,
      },
      { name: 'masked_columns: resolving the cached plan for one result (once per result, no per-row work)', value: Math.max(traced.resolve, tracedStar.resolve), unit: 'ms' },
      { name: 'guarded path of a new 3-join query, viewer (validate, rewrite, validate + check rewrite)', value: median(bound), unit: 'ms' },
      { name: 'guarded path of a new 3-join query, exempt admin (validate)', value: median(exempt), unit: 'ms' },
      { name: 'masking cost per new SQL text in that path (viewer - admin)', value: median(bound) - median(exempt), unit: 'ms' },
      { name: '/api/query throughput, no policies', value: none, unit: 'req/s' },
      { name: '/api/query throughput, 5 policies', value: masked, unit: 'req/s' },
      { name: 'throughput ratio 5 policies / none', value: ratio, unit: 'x', target: '>= 0.7', ok: ratio >= 0.7 },
    ];
  } finally {
    await s.close();
  }
}

const READ_COLUMNS = ['id', 'name', 'email', 'note', 'phone', 'card', 'ssn'];
/** Policies match by column name on any table: the table without policies names its columns apart. */
const PLAIN_COLUMNS = ['id', 'name', 'contact', 'remark', 'tel', 'pan', 'ident'];
const readTable = (table: string, c: string[]) => `CREATE TABLE ${table} AS SELECT i AS ${c[0]}, 'name ' || i AS ${c[1]}, 'user' || i || '@example.com' AS ${c[2]},
  'private note ' || i AS ${c[3]}, '555-01' || lpad(CAST(i % 100 AS VARCHAR), 2, '0') AS ${c[4]},
  '4111-1111-1111-' || lpad(CAST(i % 10000 AS VARCHAR), 4, '0') AS ${c[5]}, lpad(CAST(i AS VARCHAR), 9, '0') AS ${c[6]} FROM range(10000) t(i)`;
const readSql = (columns: string[], table: string) => `SELECT ${columns.join(', ')} FROM ${table} WHERE id < 20 ORDER BY id`;

/** Issue 35 item 1: reads of a table with five masked columns against the bare route, CPU per request. */
async function oneTableReads(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-masked-read-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\n');
  const app = await App.boot({ projectRoot: root, serving: true, auth: true });
  await app.start();
  const server = await createServer(app);
  const instance = await DuckDBInstance.create(path.join(root, 'bare.duckdb'));
  const bare = Fastify();
  try {
    for (const sql of [readTable('people', READ_COLUMNS), readTable('plain_people', PLAIN_COLUMNS)]) {
      await app.db.run(sql);
      const c = await instance.connect();
      await c.run(sql);
      c.closeSync();
    }
    await app.auth.users.create({ username: 'admin', password: 'admin-pass-1', role: 'admin' });
    await app.auth.users.create({ username: 'viewer', password: 'viewer-pass-1', role: 'viewer' });
    const admin = (await app.auth.users.issueToken('admin')).token;
    const viewer = (await app.auth.users.issueToken('viewer')).token;
    for (const [column, method] of [['email', 'email'], ['note', 'redact'], ['phone', 'phone'], ['card', 'credit_card'], ['ssn', 'hash']]) {
      const r = await server.inject({ method: 'POST', url: '/api/masking/policies', headers: { authorization: `Bearer ${admin}` }, payload: { schema_name: 'main', table_name: 'people', column_name: column, method } });
      if (r.statusCode !== 201) throw new Error(`policy ${column}: ${r.statusCode} ${r.body}`);
    }
    addBareQueryRoute(bare, instance);
    await bare.ready();
    const cases = [
      { name: 'viewer, 7 columns, 5 masked', sql: readSql(READ_COLUMNS, 'people'), token: viewer, masked: true, target: 0.8 },
      { name: 'viewer, the 2 unmasked columns of that table', sql: readSql(['id', 'name'], 'people'), token: viewer, masked: false, target: 0.9 },
      { name: 'exempt admin, 7 columns', sql: readSql(READ_COLUMNS, 'people'), token: admin, masked: false, target: undefined },
      { name: 'viewer, 7 columns of a table without policies', sql: readSql(PLAIN_COLUMNS, 'plain_people'), token: viewer, masked: false, target: undefined },
    ];
    const runs = cases.flatMap((c) => [
      { key: `dp ${c.name}`, call: () => server.inject({ method: 'POST', url: '/api/query', headers: { authorization: `Bearer ${c.token}` }, payload: { sql: c.sql } }) },
      { key: `bare ${c.name}`, call: () => bare.inject({ method: 'POST', url: '/raw', payload: { sql: c.sql } }) },
    ]);
    // Every answer checked first: the viewer's email is masked where policies apply, raw elsewhere.
    for (const c of cases) {
      const r = await server.inject({ method: 'POST', url: '/api/query', headers: { authorization: `Bearer ${c.token}` }, payload: { sql: c.sql } });
      const rows = (JSON.parse(r.body) as { rows?: unknown[][] }).rows;
      if (r.statusCode !== 200 || rows?.length !== 20) throw new Error(`${c.name}: ${r.statusCode} ${r.body.slice(0, 300)}`);
      if (rows[1].length === 7 && (rows[1][2] === 'user1@example.com') === c.masked) throw new Error(`${c.name}: email ${String(rows[1][2])}`);
    }
    const N = Number(process.env.DP_MASKED_READ_REQUESTS ?? 1500);
    for (let i = 0; i < 200; i++) for (const r of runs) await r.call();
    const cpu = new Map(runs.map((r) => [r.key, 0]));
    for (let i = 0; i < N; i++) {
      for (const r of runs) {
        const before = process.cpuUsage();
        await r.call();
        const used = process.cpuUsage(before);
        cpu.set(r.key, cpu.get(r.key)! + (used.user + used.system) / 1000);
      }
    }
    const load = os.loadavg()[0].toFixed(1);
    const per = (key: string) => cpu.get(key)! / N;
    const rows: BenchResult[] = cases.flatMap((c) => {
      const ratio = per(`bare ${c.name}`) / per(`dp ${c.name}`);
      return [
        { name: `one-table read, ${c.name}: dp CPU per request (load ${load})`, value: per(`dp ${c.name}`), unit: 'ms' },
        { name: `one-table read, ${c.name}: bare route CPU per request`, value: per(`bare ${c.name}`), unit: 'ms' },
        { name: `one-table read, ${c.name}: bare CPU / dp CPU`, value: ratio, unit: 'x', ...(c.target ? { target: `>= ${c.target}`, ok: ratio >= c.target } : {}) },
      ];
    });
    // What exemption costs: the admin's read of the table with policies against the viewer's read of one without (same shape).
    rows.push({ name: 'one-table read: exempt admin CPU / viewer on a table without policies', value: per(`dp ${cases[2].name}`) / per(`dp ${cases[3].name}`), unit: 'x', target: '<= 1.05', ok: per(`dp ${cases[2].name}`) / per(`dp ${cases[3].name}`) <= 1.05 });
    return rows;
  } finally {
    await bare.close();
    instance.closeSync();
    await server.close();
    await app.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
