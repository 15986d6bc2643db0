/**
 * Masking through lineage (issue 19): /api/query throughput of a masked query on a mart three
 * models downstream of the policy (seed → staging view → intermediate view → mart table) against
 * the same query on the seed itself, alternating rounds and taking medians. Policies are derived
 * when models change, so the mart's query pays only the per-query rewrite, like the seed's.
 */
import { makeProject, startServer } from '../test/helpers.js';
import { type BenchResult, throughput } from './util.js';

const ROWS = 2000;
const people = ['id,email,name,salary', ...Array.from({ length: ROWS }, (_, i) => `${i},u${i}@example.com,name${i},${i * 10}`)].join('\n') + '\n';
const model = (schema: string, materialized: string, sql: string) => `-- @config materialized=${materialized}, schema=${schema}\n${sql}\n`;

export default async (): Promise<BenchResult[]> => {
  const root = makeProject({
    'project.yml': 'name: b\ndatabase:\n  path: b.duckdb\nmasking:\n  enforce_without_auth: true\n',
    'seeds/people.csv': people,
    'transform/staging/stg_people.sql': model('staging', 'view', 'SELECT id, email AS contact, name, salary FROM seeds.people'),
    'transform/intermediate/int_people.sql': model('intermediate', 'view', 'SELECT id, contact AS contact_email, name, salary FROM staging.stg_people'),
    'transform/marts/people_mart.sql': model('marts', 'table', 'SELECT id, contact_email AS email, name, salary FROM intermediate.int_people'),
  });
  const s = await startServer(root);
  try {
    const models = s.app.services.get<any>('models');
    await models.loadSeeds({});
    await models.transform({});
    const r = await s.request('POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: 'email', method: 'email', exempted_roles: [] });
    if (r.status !== 201) throw new Error(r.text);
    const init = (sql: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql, limit: 100 }) });
    const seedSql = 'SELECT id, email, name FROM seeds.people LIMIT 100';
    const martSql = 'SELECT id, email, name FROM marts.people_mart LIMIT 100';
    // The mart's column is masked through lineage (the check keeps the benchmark honest).
    const check = await s.request('POST', '/api/query', { sql: martSql });
    if (JSON.stringify(check.body).includes('u1@example.com')) throw new Error('the mart column is not masked');
    const seedRuns: number[] = [];
    const martRuns: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const [sql, runs] of [[seedSql, seedRuns], [martSql, martRuns]] as const) {
        await throughput(`${s.url}/api/query`, init(sql), 300, 4);
        runs.push(await throughput(`${s.url}/api/query`, init(sql), 1500, 4));
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const ratio = median(martRuns) / median(seedRuns);
    return [
      { name: 'masked query on the seed', value: median(seedRuns), unit: 'req/s' },
      { name: 'masked query on a mart 3 models downstream', value: median(martRuns), unit: 'req/s' },
      { name: 'mart / seed throughput', value: ratio, unit: 'ratio', target: '>= 0.9', ok: ratio >= 0.9 },
    ];
  } finally {
    await s.close();
  }
};
