/**
 * /api/query speed against the strongest plain route (issue 21), in one process run:
 *
 * - baseline: a bare Fastify route on its own DuckDB file holding the same table, with a pool of
 *   connections reused, a prepared statement cached per connection and SQL text, the result
 *   materialized in one call and its rows returned as JSON;
 * - dp `POST /api/query` with auth off;
 * - dp with auth on, as an admin (exempt from masking) holding a bearer token;
 * - dp with auth on, as a viewer, with five masking policies on the queried table (the query
 *   reads all five masked columns).
 *
 * autocannon keeps its connections open (10 by default, as the issue measured) and runs on a
 * worker thread of this process, so the servers keep the main thread. Rounds alternate the four
 * targets and each figure is the median of its rounds: load from the other processes on the
 * machine hits every target alike, and the ratios compare runs made seconds apart. Auth is the
 * same app switched between rounds (`authEnabled`), so every dp figure runs on the same file,
 * table, policies and warmed caches. Then p99 at 200 connections, dp and baseline alternating.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { DuckDBInstance } from '@duckdb/node-api';
import Fastify from 'fastify';
import { App } from '../kernel/app.js';
import { createServer } from '../kernel/http.js';
import { addBareQueryRoute, type BenchResult } from './util.js';

const SQL = 'SELECT id, name, email, phone, card, ip, amount FROM bench_t WHERE id < 20 ORDER BY id';
const SETUP = `CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, 'user' || i || '@example.com' AS email,
  '555-01' || lpad(CAST(i % 100 AS VARCHAR), 2, '0') AS phone, '4111-1111-1111-' || lpad(CAST(i % 10000 AS VARCHAR), 4, '0') AS card,
  '10.0.' || (i % 255) || '.1' AS ip, i * 1.5 AS amount FROM range(10000) t(i)`;
const POLICIES = [
  ['name', 'first_initial'],
  ['email', 'email'],
  ['phone', 'phone'],
  ['card', 'credit_card'],
  ['ip', 'ip_address'],
];
const ROUNDS = Number(process.env.DP_QUERY_ROUNDS ?? 4);
const SECONDS = Number(process.env.DP_QUERY_SECONDS ?? 3);
const CONNECTIONS = 10;
const MANY_CONNECTIONS = 200;

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The SQL sent (default SQL). */
  sql?: string;
  /** Runs before each of this target's rounds (dp: auth on or off). */
  before?: () => void;
}

interface Load {
  rps: number;
  p99: number;
  bad: number;
}

async function load(target: Target, connections: number, seconds: number): Promise<Load> {
  target.before?.();
  const r = await autocannon({
    url: target.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: JSON.stringify({ sql: target.sql ?? SQL }),
    connections,
    duration: seconds,
    workers: 1,
  });
  return { rps: r.requests.average, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts };
}

/** The plain route: pooled connections, a prepared statement per connection and SQL text, one materializing call. */
async function baselineServer(file: string) {
  const instance = await DuckDBInstance.create(file);
  const setup = await instance.connect();
  await setup.run(SETUP);
  setup.closeSync();
  const server = Fastify();
  addBareQueryRoute(server, instance);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(server.server.address() as { port: number }).port}/raw`;
  return {
    url,
    close: async () => {
      await server.close();
      instance.closeSync();
    },
  };
}

export default async function run(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-query-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\n');
  const app = await App.boot({ projectRoot: root, serving: true, auth: true });
  await app.start();
  await app.db.run(SETUP);
  const users = app.auth.users;
  await users.create({ username: 'admin', password: 'admin-pass', role: 'admin' });
  await users.create({ username: 'viewer', password: 'viewer-pass', role: 'viewer' });
  const adminToken = (await users.issueToken('admin')).token;
  const viewerToken = (await users.issueToken('viewer')).token;
  const server = await createServer(app);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const dpUrl = `http://127.0.0.1:${(server.server.address() as { port: number }).port}/api/query`;
  for (const [column, method] of POLICIES) {
    const r = await server.inject({
      method: 'POST',
      url: '/api/masking/policies',
      headers: { authorization: `Bearer ${adminToken}` },
      payload: { schema_name: 'main', table_name: 'bench_t', column_name: column, method },
    });
    if (r.statusCode !== 201) throw new Error(`policy ${column}: ${r.statusCode} ${r.body}`);
  }
  const baseline = await baselineServer(path.join(root, 'baseline.duckdb'));
  // The text masking makes of SQL for the viewer: run through the plain route, it shows what the
  // masks cost DuckDB itself, apart from dp's own work per request.
  const maskedSql = (await app.queries.prepare({ sql: SQL, caller: { username: 'viewer', role: 'viewer', authenticated: true }, purpose: 'query' })).sql;
  if (maskedSql === SQL) throw new Error('the viewer query was not rewritten by masking');

  const targets: Target[] = [
    { name: 'baseline', url: baseline.url, headers: {} },
    { name: 'auth off', url: dpUrl, headers: {}, before: () => (app.authEnabled = false) },
    { name: 'auth on, exempt admin', url: dpUrl, headers: { authorization: `Bearer ${adminToken}` }, before: () => (app.authEnabled = true) },
    { name: 'auth on, viewer, 5 policies', url: dpUrl, headers: { authorization: `Bearer ${viewerToken}` }, before: () => (app.authEnabled = true) },
    { name: 'baseline running the masked text', url: baseline.url, headers: {}, sql: maskedSql },
  ];
  try {
    // Each target answers and the viewer's answer is masked before anything is timed.
    for (const t of targets) {
      t.before?.();
      const res = await fetch(t.url, { method: 'POST', headers: { 'content-type': 'application/json', ...t.headers }, body: JSON.stringify({ sql: t.sql ?? SQL }) });
      const body = (await res.json()) as { rows?: unknown[][] };
      if (res.status !== 200 || body.rows?.length !== 20) throw new Error(`${t.name} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      const email = String(body.rows[1][2]);
      const masked = t.name.includes('viewer') || t.sql === maskedSql;
      if (masked ? email === 'user1@example.com' : email !== 'user1@example.com') throw new Error(`${t.name}: masking not as expected (${email})`);
      await load(t, CONNECTIONS, 1);
    }
    const rounds = new Map<string, Load[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of targets) rounds.get(t.name)!.push(await load(t, CONNECTIONS, SECONDS));
    }
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    };
    const rps = (name: string) => median(rounds.get(name)!.map((l) => l.rps));
    const bad = [...rounds.values()].flat().reduce((n, l) => n + l.bad, 0);

    // p99 at 200 connections: dp (auth off, and the masked viewer) and the baseline, alternating.
    const many = new Map<string, number[]>([targets[0], targets[1], targets[3]].map((t) => [t.name, []]));
    let manyBad = 0;
    for (let round = 0; round < 2; round++) {
      for (const t of [targets[0], targets[1], targets[3]]) {
        const l = await load(t, MANY_CONNECTIONS, SECONDS);
        many.get(t.name)!.push(l.p99);
        manyBad += l.bad;
      }
    }
    const p99 = (name: string) => median(many.get(name)!);

    const base = rps('baseline');
    const ratios = [
      { name: 'auth off / baseline', value: rps('auth off') / base, min: 0.9 },
      { name: 'auth on, exempt admin / baseline', value: rps('auth on, exempt admin') / base, min: 0.85 },
      { name: 'auth on, viewer with 5 policies / baseline (unmasked)', value: rps('auth on, viewer, 5 policies') / base, min: 0.7 },
    ];
    const engineShare = rps('baseline running the masked text') / base;
    const dpShare = rps('auth on, viewer, 5 policies') / rps('baseline running the masked text');
    return [
      ...targets.map((t) => ({ name: `${t.name}: ${CONNECTIONS} connections (median of ${ROUNDS} rounds)`, value: rps(t.name), unit: 'req/s' })),
      ...ratios.map((r) => ({ name: r.name, value: r.value, unit: 'ratio', target: `>= ${r.min}`, ok: r.value >= r.min })),
      { name: 'masked text / unmasked, both on the plain route (what the masks cost DuckDB)', value: engineShare, unit: 'ratio' },
      { name: 'auth on, viewer with 5 policies / plain route running the masked text (dp\'s own share)', value: dpShare, unit: 'ratio' },
      { name: `baseline: p99 at ${MANY_CONNECTIONS} connections`, value: p99('baseline'), unit: 'ms' },
      { name: `auth off: p99 at ${MANY_CONNECTIONS} connections`, value: p99('auth off'), unit: 'ms', target: '< 50', ok: p99('auth off') < 50 },
      { name: `auth on, viewer, 5 policies: p99 at ${MANY_CONNECTIONS} connections`, value: p99('auth on, viewer, 5 policies'), unit: 'ms', target: '< 50', ok: p99('auth on, viewer, 5 policies') < 50 },
      { name: 'non-2xx answers and errors, all runs', value: bad + manyBad, unit: 'requests', target: '0', ok: bad + manyBad === 0 },
    ];
  } finally {
    await baseline.close();
    await server.close();
    await app.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
