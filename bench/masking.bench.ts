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
 *   alternating rounds and taking medians.
 */
import { MethodCatalog } from '../plugins/masking/catalog.js';
import { MaskingEnforcer } from '../plugins/masking/enforce.js';
import { PolicyStore } from '../plugins/masking/policies.js';
import { planResultMarks, resolveMarks, type ScanColumns } from '../plugins/masking/result-columns.js';
import type { Caller } from '../sdk/index.js';
import { makeProject, startServer } from '../test/helpers.js';
import { type BenchResult, throughput, timePerCall } from './util.js';

const JOINS = `FROM crm.customers c JOIN crm.orders o ON o.customer_id = c.id
  JOIN crm.payments p ON p.order_id = o.id JOIN crm.shipments s ON s.order_id = o.id`;
const JOIN3 = `SELECT c.name, c.email, o.amount, p.method, s.carrier, p.card, s.ip\n  ${JOINS}`;
const JOIN3_STAR = `SELECT c.*, o.amount, p.card, s.ip\n  ${JOINS}`;

export default async (): Promise<BenchResult[]> => {
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
    const enforcer = new MaskingEnforcer({ db: s.app.db }, catalog, store, () => ({ enforceWithoutAuth: true }), silent);
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
};
