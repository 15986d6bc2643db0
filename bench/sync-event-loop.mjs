// The server's event loop during a csv sync and a forced transform, in process (issue 34 item 5):
// event-loop utilisation and delay (monitorEventLoopDelay) over each, beside its wall time. The
// figure that told where mixed-load latency went: a sync that carries rows through JS holds the
// loop that every request needs. Needs a build. Usage: node bench/sync-event-loop.mjs [repo]
//   env: CSV_ROWS=1000000 WHAT=sync,transform (60 models of 100k-row bases and joins)
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const repo = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const { startTestServer } = await import(pathToFileURL(path.join(repo, 'dist/sdk/testing.js')).href);
const files = {};
for (let i = 0; i < 60; i++) { const ref = (k) => `layer0.m${k}`;
  files[`transform/layer0/m${i}.sql`] = `-- @config materialized=table, schema=layer0\n` + (i < 6 ? `SELECT range AS id, range % 10 AS g, (range * ${i + 1}) % 97 AS v FROM range(100000)` : `WITH a AS (SELECT id, g, v FROM ${ref((i * 7919) % i)})\nSELECT a.id, a.g, a.v + b.v AS v FROM a JOIN ${ref((i * 104729 + 13) % i)} AS b USING (id)`) + '\n'; }
files['data/source/.keep'] = '';
const s = await startTestServer({ plugins: [], builtIn: ['models', 'connectors', 'query', 'tables', 'files', 'scripts', 'streams', 'quality', 'masking'], files });
const csv = path.join(s.projectRoot, 'data/source/events.csv');
await s.db.run(`COPY (SELECT i AS id, 'user' || (i % 5000) AS user_name, 'event ' || (i % 37) AS kind, i * 0.25 AS amount, TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS at FROM range(${process.env.CSV_ROWS ?? 1000000}) t(i)) TO '${csv}' (HEADER)`);
let r = await s.request('POST', '/api/connectors/setup', { connector_type: 'csv', connection_name: 'source', config: { path: 'data/source' }, tables: [{ name: 'events', cdc_mode: 'full_refresh' }], target_schema: 'raw' });
if (r.status !== 200) throw new Error(r.text);
async function measure(name, fn) {
  const h = monitorEventLoopDelay({ resolution: 5 }); h.enable();
  const elu = performance.eventLoopUtilization(); const t = performance.now();
  const out = await fn();
  h.disable();
  console.log(name, { wall_s: ((performance.now() - t) / 1000).toFixed(1), elu: performance.eventLoopUtilization(elu).utilization.toFixed(2), eld_p99_ms: (h.percentile(99) / 1e6).toFixed(0), eld_max_ms: (h.max / 1e6).toFixed(0), status: out.status, text: out.text.slice(0, 150) });
}
for (const what of (process.env.WHAT ?? 'sync,transform').split(',')) {
  if (what === 'sync') await measure('sync', () => s.request('POST', '/api/connectors/sync/source', {}));
  if (what === 'transform') await measure('transform', () => s.request('POST', '/api/transform', { force: true }));
}
await s.close();
