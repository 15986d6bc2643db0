/**
 * Models written natively in ClickHouse SQL (`-- @config dialect=clickhouse`), without a server:
 * the golden corpus of what dp reads as their references (test/fixtures/clickhouse/native-models.json:
 * ClickHouse-only syntax DuckDB's parser refuses), and on a DuckDB environment the DAG, lineage
 * ("not analysed"), `dp check` and `dp transform` (refused, naming the model), and masking: a table
 * of a native model's name is masked as a whole wherever what the model reads is masked.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nativeReferences } from '../../../plugins/models/native.js';
import { derivePolicies } from '../../../plugins/masking/derived.js';
import type { MaskingPolicy } from '../../../plugins/masking/policies.js';
import type { ModelLineage } from '../../../sdk/index.js';
import { runCommand } from '../../../sdk/testing.js';
import { makeProject, REPO_ROOT } from '../../helpers.js';
import { startServerWithRoles, type RoleServer } from '../../support/role-server.js';

const corpus = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'test', 'fixtures', 'clickhouse', 'native-models.json'), 'utf8')) as Array<{
  name: string;
  sql: string;
  reads?: string[];
  error?: string;
}>;

describe('the references of native ClickHouse SQL (golden corpus)', () => {
  for (const c of corpus) {
    it(c.name, async () => {
      const r = await nativeReferences(c.sql);
      if (c.error) {
        assert.ok(r.error, `an error for ${c.sql}`);
        if (c.error.startsWith('^')) assert.ok(r.error.startsWith(c.error.slice(1)), r.error);
        else assert.equal(r.error, c.error);
        return;
      }
      assert.equal(r.error, null, String(r.error));
      assert.deepEqual(r.refs.map((x) => `${x.schema}.${x.table}`).sort(), [...c.reads!].sort());
    });
  }
});

const policy = (schema: string, table: string, column: string, exempt: string[] = ['admin']): MaskingPolicy => ({
  id: `p_${column}`,
  schema_name: schema,
  table_name: table,
  column_name: column,
  method: 'redact',
  method_config: {},
  condition_column: null,
  condition_value: null,
  exempted_roles: exempt,
  created_at: '',
});
const notAnalysed = (model: string, reads: string[], extra: Partial<ModelLineage> = {}): ModelLineage => ({
  model,
  columns: { '*': reads.map((r) => ({ source_table: r, source_column: '*' })) },
  kinds: { '*': 'computed' },
  depends_on: reads,
  method: 'not_analysed',
  ...extra,
});

describe('derived policies of models lineage does not trace', () => {
  const columns: Record<string, string[]> = { 'seeds.people': ['id', 'email'], 'seeds.plain': ['id', 'note'] };
  const derive = (explicit: MaskingPolicy[], lineage: ModelLineage[]) => derivePolicies(explicit, lineage, () => undefined, (r) => columns[r]);

  it('a native model reading a masked relation is masked as a whole, for the roles every mask it reads binds', () => {
    const derived = derive([policy('seeds', 'people', 'email', ['admin', 'editor'])], [notAnalysed('marts.contacts', ['seeds.people'])]);
    assert.deepEqual(
      derived.map((d) => [d.id, d.column_name, d.exempted_roles, d.sources]),
      [['derived:marts.contacts.*', '*', ['admin', 'editor'], ['seeds.people.email']]],
    );
  });

  it('one reading nothing masked is not; one whose reads are not known is masked by any policy', () => {
    const explicit = [policy('seeds', 'people', 'email')];
    assert.deepEqual(derive(explicit, [notAnalysed('marts.notes', ['seeds.plain'])]), []);
    const unknown = derive(explicit, [notAnalysed('marts.notes', ['seeds.plain'], { reads_known: false })]);
    assert.deepEqual(unknown.map((d) => d.id), ['derived:marts.notes.*']);
  });

  it('a namesake policy counts when the relation read has the column, or when its columns are not known', () => {
    const explicit = [policy('crm', 'users', 'email')];
    assert.deepEqual(derive(explicit, [notAnalysed('marts.a', ['seeds.people'])]).map((d) => d.id), ['derived:marts.a.*'], 'seeds.people has an email column');
    assert.deepEqual(derive(explicit, [notAnalysed('marts.b', ['seeds.plain'])]), [], 'seeds.plain has none');
    assert.deepEqual(derive(explicit, [notAnalysed('marts.c', ['raw.unknown'])]).map((d) => d.id), ['derived:marts.c.*'], 'columns not known');
  });

  it('downstream: a DuckDB model selecting * from it is masked as a whole too; a column it names is derived as computed', () => {
    const derived = derive(
      [policy('seeds', 'people', 'email')],
      [
        notAnalysed('marts.contacts', ['seeds.people']),
        { model: 'marts.copy', columns: { '*': [{ source_table: 'marts.contacts', source_column: '*' }] }, kinds: { '*': 'pass' }, depends_on: ['marts.contacts'], method: 'parser' },
        { model: 'marts.named', columns: { contact: [{ source_table: 'marts.contacts', source_column: 'contact' }] }, kinds: { contact: 'pass' }, depends_on: ['marts.contacts'], method: 'parser' },
      ],
    );
    assert.deepEqual(derived.map((d) => [d.id, d.method]), [
      ['derived:marts.contacts.*', 'redact'],
      ['derived:marts.copy.*', 'redact'],
      ['derived:marts.named.contact', 'redact'],
    ]);
  });
});

describe('native models on a DuckDB environment', () => {
  let srv: RoleServer;
  const dp = (argv: string[]) => runCommand(srv.s.app, argv);
  const as = (role: 'viewer' | 'admin', method: string, url: string, body?: unknown) => srv.s.request(method, url, body, { token: srv.tokens[role] });

  before(async () => {
    const root = makeProject({
      'seeds/people.csv': 'id,email,name\n1,ada@example.com,Ada\n2,alan@example.org,Alan\n',
      'transform/staging/emails.sql': '-- @config materialized=view\nSELECT id, email, name FROM seeds.people\n',
      // LIMIT n BY and arrayJoin: ClickHouse SQL DuckDB's parser refuses.
      'transform/marts/contacts.sql': '-- @config dialect=clickhouse\nSELECT id, arrayJoin([email, name]) AS contact FROM staging.emails LIMIT 1 BY id\n',
      'transform/marts/after_contacts.sql': 'SELECT count(*) AS n FROM marts.contacts\n',
      'transform/marts/unqualified.sql': '-- @config dialect=clickhouse\nSELECT id FROM emails\n',
    });
    srv = await startServerWithRoles(root);
    assert.equal((await dp(['seed'])).code, 0);
  });
  after(async () => srv?.s.close());

  it('discovery accepts the ClickHouse syntax: the DAG shows the model with its edges, and an unqualified name is an error naming the file', async () => {
    const dag = await as('admin', 'GET', '/api/dag');
    assert.equal(dag.status, 200, dag.text);
    assert.ok(dag.body.nodes.some((n: { id: string }) => n.id === 'marts.contacts'));
    const edges = dag.body.edges.map((e: { source: string; target: string }) => `${e.source}>${e.target}`).sort();
    assert.deepEqual(edges, ['marts.contacts>marts.after_contacts', 'staging.emails>marts.contacts']);
    const check = JSON.parse((await dp(['check', '--json'])).stdout);
    const byModel = Object.fromEntries(check.validation.models.map((m: { model: string }) => [m.model, m]));
    assert.deepEqual(byModel['marts.contacts'].errors, []);
    assert.match(byModel['marts.contacts'].warnings[0], /marts\.contacts is written in ClickHouse SQL .*runs on a ClickHouse target only/);
    assert.match(byModel['marts.unqualified'].errors[0], /transform\/marts\/unqualified\.sql: 'emails' is not qualified/);
  });

  it('lineage says the model is not analysed and names what it reads', async () => {
    const r = await as('admin', 'GET', '/api/lineage/marts.contacts');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.method, 'not_analysed');
    assert.deepEqual(r.body.depends_on, ['staging.emails']);
    assert.deepEqual(r.body.columns, { '*': [{ source_table: 'staging.emails', source_column: '*' }] });
  });

  it('dp transform refuses it naming the model (it cannot run on DuckDB); its downstream does not build; the rest does', async () => {
    const r = await dp(['transform', '--json']);
    assert.equal(r.code, 1);
    const results = Object.fromEntries(JSON.parse(r.stdout).results.map((x: { model: string }) => [x.model, x]));
    assert.equal(results['staging.emails'].status, 'built');
    assert.equal(results['marts.contacts'].status, 'error');
    assert.match(results['marts.contacts'].error, /^transform\/marts\/contacts\.sql: marts\.contacts is written in ClickHouse SQL \(@config dialect=clickhouse\); it runs on a ClickHouse target only/);
    assert.equal(results['marts.after_contacts'].status, 'upstream_failed');
    assert.equal(await srv.s.app.db.catalog.exists('marts', 'contacts'), false);
  });

  it("a table of the model's name is masked as a whole for a viewer, never a raw value; the admin is exempt", async () => {
    // What a build elsewhere would leave: a table named like the model, its columns unknown to lineage.
    await srv.s.app.db.run("CREATE SCHEMA IF NOT EXISTS marts; CREATE OR REPLACE TABLE marts.contacts AS SELECT 1 AS id, 'ada@example.com' AS contact UNION ALL SELECT 2, 'Alan'");
    const added = await as('admin', 'POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: 'email', method: 'redact' });
    assert.equal(added.status, 201, added.text);
    const derived = await as('admin', 'GET', '/api/masking/policies?derived=true');
    assert.ok(derived.body.some((p: { table_name: string; column_name: string }) => p.table_name === 'contacts' && p.column_name === '*'), derived.text);
    for (const sql of ['SELECT id, contact FROM marts.contacts', 'SELECT * FROM marts.contacts', 'SELECT upper(contact) AS c FROM marts.contacts', 'SELECT x.contact AS renamed FROM marts.contacts AS x']) {
      const r = await as('viewer', 'POST', '/api/query', { sql });
      assert.doesNotMatch(r.text, /ada@example|Alan|ADA@EXAMPLE/i, `${sql}: ${r.text}`);
      if (r.status === 200) assert.ok(r.body.masked_columns.length > 0, `${sql}: ${r.text}`);
      else assert.equal(r.status, 403, `${sql}: ${r.text}`);
    }
    const filtered = await as('viewer', 'POST', '/api/query', { sql: "SELECT id FROM marts.contacts WHERE contact = 'Alan'" });
    assert.equal(filtered.status, 403, filtered.text);
    assert.equal(filtered.body.error.code, 'masked_column_in_predicate');
    const admin = await as('admin', 'POST', '/api/query', { sql: 'SELECT contact FROM marts.contacts ORDER BY id' });
    assert.deepEqual(admin.body.rows, [['ada@example.com'], ['Alan']]);
  });

  it('dp lint applies only its text rules to it, and --fix leaves its ClickHouse SQL as written', async () => {
    const file = path.join(srv.root, 'transform/marts/contacts.sql');
    const before = fs.readFileSync(file, 'utf8');
    const r = await dp(['lint', '--fix', '--json']);
    const report = JSON.parse(r.stdout);
    assert.equal(report.fixed.includes('transform/marts/contacts.sql'), false);
    assert.equal(fs.readFileSync(file, 'utf8'), before);
    assert.deepEqual(report.findings.filter((f: { file: string; rule: string }) => f.file === 'transform/marts/contacts.sql' && f.rule === 'parse-error'), []);
  });
});
