/**
 * Masking that follows the data (issue 19): policies propagate through column lineage. The rule
 * table of docs/security.md "Masking through lineage", row by row, as a bound viewer and as the
 * exempt admin, on a real server with --auth, real models built from a seed; declassification,
 * predicate refusal, the derived list (HTTP and CLI), a rename made by editing a model, and
 * examples/shop with a policy on a seed column masked through to its marts.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, copyShop, makeProject, runInProcess } from '../../helpers.js';
import { startServerWithRoles, type Role, type RoleServer } from '../../support/role-server.js';


const PEOPLE = `id,email,name,salary,dept
1,ada@example.com,Ada,120,eng
2,alan@example.org,Alan,90,ops
3,grace@navy.mil,Grace,150,eng
`;

const model = (sql: string, materialized = 'table') => `-- @config materialized=${materialized}, schema=m\n${sql}\n`;

/** Models covering each row of the rule table. */
const MODELS: Record<string, string> = {
  'transform/m/pass.sql': model('SELECT id, email, salary FROM seeds.people'),
  'transform/m/renamed.sql': model('SELECT id, email AS contact, salary AS pay FROM seeds.people', 'view'),
  'transform/m/casts.sql': model('SELECT id, CAST(email AS VARCHAR) AS email_text, salary::BIGINT AS pay_big FROM seeds.people'),
  'transform/m/strings.sql': model("SELECT id, upper(email) AS up, split_part(email, '@', 2) AS domain, email || '!' AS bang FROM seeds.people"),
  'transform/m/arith.sql': model('SELECT id, salary * 2 AS double_pay, salary + id AS pay_plus FROM seeds.people'),
  'transform/m/cases.sql': model("SELECT id, CASE WHEN salary > 100 THEN 'high' ELSE 'low' END AS band, coalesce(email, 'none') AS mail_or_none FROM seeds.people"),
  'transform/m/aggs.sql': model(
    'SELECT dept, count(*) AS n, count(email) AS n_email, count(DISTINCT email) AS n_distinct, min(email) AS min_email, max(salary) AS max_pay, string_agg(email, \',\') AS emails, list(email) AS email_list FROM seeds.people GROUP BY dept',
  ),
  'transform/m/windows.sql': model('SELECT id, row_number() OVER (ORDER BY id) AS rn, lag(email) OVER (ORDER BY id) AS prev_email, sum(salary) OVER () AS total_pay FROM seeds.people'),
  'transform/m/unioned.sql': model('SELECT id, email AS v FROM seeds.people UNION ALL SELECT id, name FROM seeds.people'),
  'transform/m/unioned_same.sql': model('SELECT id, email AS v FROM seeds.people UNION ALL SELECT id, email FROM m.pass'),
  'transform/m/joined.sql': model('SELECT a.id, b.email AS other_email, a.name FROM seeds.people AS a JOIN seeds.people AS b ON a.id = b.id'),
  'transform/m/ctes.sql': model('WITH x AS (SELECT id, email AS e FROM seeds.people), y AS (SELECT id, e AS f, upper(e) AS g FROM x) SELECT id, f, g FROM y'),
  'transform/m/starred.sql': model('SELECT * FROM (SELECT id, email AS star_mail, name FROM seeds.people)'),
  'transform/m/v1.sql': model('SELECT id, email AS e1 FROM seeds.people', 'view'),
  'transform/m/v2.sql': model('SELECT id, e1 AS e2 FROM m.v1', 'view'),
  'transform/m/v3.sql': model('SELECT id, e2 AS e3, lower(e2) AS e3_lower FROM m.v2'),
  'transform/m/unpivoted.sql': model('UNPIVOT (SELECT id, email, name FROM seeds.people) ON email, name INTO NAME field VALUE val'),
  'transform/m/pivoted.sql': model('PIVOT (SELECT id, dept, email FROM seeds.people) ON dept USING first(email) GROUP BY id'),
};

/**
 * The rule table: relation, column, what a bound viewer sees. `same`: the source's own mask
 * (compared by id with the viewer's read of the seed column); `redact`: '***'; `null`: NULL;
 * `raw`: the unmasked value.
 */
type Expect = 'same' | 'redact' | 'null' | 'raw';
const RULES: Array<{ rule: string; rel: string; column: string; source?: 'email' | 'salary'; expect: Expect }> = [
  { rule: 'pass-through', rel: 'pass', column: 'email', source: 'email', expect: 'same' },
  { rule: 'pass-through (other method)', rel: 'pass', column: 'salary', source: 'salary', expect: 'same' },
  { rule: 'rename', rel: 'renamed', column: 'contact', source: 'email', expect: 'same' },
  { rule: 'rename (other method)', rel: 'renamed', column: 'pay', source: 'salary', expect: 'same' },
  { rule: 'cast to text', rel: 'casts', column: 'email_text', source: 'email', expect: 'same' },
  { rule: 'widening cast', rel: 'casts', column: 'pay_big', source: 'salary', expect: 'same' },
  { rule: 'string function upper', rel: 'strings', column: 'up', expect: 'redact' },
  { rule: 'string function split_part', rel: 'strings', column: 'domain', expect: 'redact' },
  { rule: 'concatenation', rel: 'strings', column: 'bang', expect: 'redact' },
  { rule: 'arithmetic', rel: 'arith', column: 'double_pay', expect: 'null' },
  { rule: 'arithmetic with an unmasked column', rel: 'arith', column: 'pay_plus', expect: 'null' },
  { rule: 'CASE', rel: 'cases', column: 'band', expect: 'redact' },
  { rule: 'COALESCE', rel: 'cases', column: 'mail_or_none', expect: 'redact' },
  { rule: 'group key (unmasked input)', rel: 'aggs', column: 'dept', expect: 'raw' },
  { rule: 'count(*)', rel: 'aggs', column: 'n', expect: 'raw' },
  { rule: 'count(col)', rel: 'aggs', column: 'n_email', expect: 'raw' },
  { rule: 'count(DISTINCT col)', rel: 'aggs', column: 'n_distinct', expect: 'null' },
  { rule: 'min', rel: 'aggs', column: 'min_email', expect: 'redact' },
  { rule: 'max', rel: 'aggs', column: 'max_pay', expect: 'null' },
  { rule: 'string_agg', rel: 'aggs', column: 'emails', expect: 'redact' },
  { rule: 'list', rel: 'aggs', column: 'email_list', expect: 'null' },
  { rule: 'window without masked input', rel: 'windows', column: 'rn', expect: 'raw' },
  { rule: 'window over masked input (lag)', rel: 'windows', column: 'prev_email', expect: 'redact' },
  { rule: 'window aggregate over masked input', rel: 'windows', column: 'total_pay', expect: 'null' },
  { rule: 'UNION of masked and unmasked', rel: 'unioned', column: 'v', expect: 'redact' },
  { rule: 'UNION of one masked value passed through twice', rel: 'unioned_same', column: 'v', source: 'email', expect: 'same' },
  { rule: 'join', rel: 'joined', column: 'other_email', source: 'email', expect: 'same' },
  { rule: 'join (unmasked column)', rel: 'joined', column: 'name', expect: 'raw' },
  { rule: 'CTE chain of renames', rel: 'ctes', column: 'f', source: 'email', expect: 'same' },
  { rule: 'CTE chain with a function', rel: 'ctes', column: 'g', expect: 'redact' },
  { rule: 'star expansion over a renaming subquery', rel: 'starred', column: 'star_mail', source: 'email', expect: 'same' },
  { rule: 'view over view over view (renames)', rel: 'v3', column: 'e3', source: 'email', expect: 'same' },
  { rule: 'view over views with a function', rel: 'v3', column: 'e3_lower', expect: 'redact' },
  { rule: 'view in the middle of the chain', rel: 'v2', column: 'e2', source: 'email', expect: 'same' },
  { rule: 'UNPIVOT value column', rel: 'unpivoted', column: 'val', expect: 'redact' },
  { rule: 'PIVOT cells', rel: 'pivoted', column: 'eng', expect: 'redact' },
  { rule: 'PIVOT group column', rel: 'pivoted', column: 'id', expect: 'raw' },
];

async function query(srv: RoleServer, role: Role, sql: string) {
  return srv.s.request('POST', '/api/query', { sql }, { token: srv.tokens[role] });
}

/** A column of a query result as objects keyed by column name. */
async function column(srv: RoleServer, role: Role, rel: string, col: string): Promise<Array<{ id: unknown; value: unknown }>> {
  const r = await query(srv, role, `SELECT * FROM m.${rel}`);
  assert.equal(r.status, 200, `${rel}.${col} as ${role}: ${r.text.slice(0, 300)}`);
  const cols: string[] = r.body.columns.map((c: any) => (typeof c === 'string' ? c : c.name));
  const at = cols.indexOf(col);
  assert.ok(at >= 0, `m.${rel} has no column ${col} (${cols.join(', ')})`);
  const idAt = cols.indexOf('id');
  return r.body.rows.map((row: unknown[]) => ({ id: idAt >= 0 ? row[idAt] : null, value: row[at] }));
}

const sortKey = (v: unknown) => JSON.stringify(v);

describe('masking through lineage', () => {
  let srv: RoleServer;
  /** The viewer's read of each masked seed column, by id. */
  const seedMasked: Record<'email' | 'salary', Map<string, unknown>> = { email: new Map(), salary: new Map() };

  before(async () => {
    const root = makeProject({ 'seeds/people.csv': PEOPLE, ...MODELS });
    srv = await startServerWithRoles(root);
    for (const [column, method] of [['email', 'partial'], ['salary', 'range']] as const) {
      const r = await srv.s.request('POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: column, method }, { token: srv.tokens.admin });
      assert.equal(r.status, 201, r.text);
    }
    const models = srv.s.app.services.get<any>('models');
    await models.loadSeeds({});
    const summary = await models.transform({});
    assert.ok(summary, 'transform ran');
    for (const source of ['email', 'salary'] as const) {
      const r = await query(srv, 'viewer', `SELECT id, ${source} FROM seeds.people`);
      assert.equal(r.status, 200, r.text);
      for (const [id, v] of r.body.rows) seedMasked[source].set(String(id), v);
    }
    assert.equal(seedMasked.email.get('1'), '***************', 'the seed column itself is masked');
  });
  after(async () => srv?.s.close());

  for (const { rule, rel, column: col, source, expect } of RULES) {
    it(`rule "${rule}": m.${rel}.${col} is ${expect === 'same' ? `masked like seeds.people.${source}` : expect} for a viewer, raw for the exempt admin`, async () => {
      const viewer = await column(srv, 'viewer', rel, col);
      assert.ok(viewer.length > 0);
      const raw = await srv.s.app.db.all<Record<string, unknown>>(`SELECT ${JSON.stringify(col)} AS value FROM m.${rel}`);
      const rawValues = raw.map((r) => r.value);
      if (expect === 'same') {
        for (const { id, value } of viewer) assert.deepEqual(value, seedMasked[source!].get(String(id)), `${rel}.${col} id ${id}`);
      } else if (expect === 'redact') {
        assert.ok(viewer.every(({ value }) => value === '***' || value === null), JSON.stringify(viewer));
        assert.ok(viewer.some(({ value }) => value === '***'));
      } else if (expect === 'null') {
        assert.ok(viewer.every(({ value }) => value === null), JSON.stringify(viewer));
      } else {
        assert.deepEqual(viewer.map((v) => sortKey(v.value)).sort(), rawValues.map((v) => sortKey(JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x))))).sort());
      }
      if (expect !== 'raw') {
        // Nothing of the raw values reaches the viewer.
        const text = JSON.stringify(viewer);
        for (const secret of ['ada@example.com', 'example.org', 'navy.mil']) assert.ok(!text.includes(secret), `${secret} in ${text}`);
      }
      const admin = await column(srv, 'admin', rel, col);
      assert.deepEqual(
        admin.map((v) => sortKey(v.value)).sort(),
        rawValues.map((v) => sortKey(JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x))))).sort(),
        'the exempt admin reads raw values',
      );
    });
  }

  it('derived masks hold on every route: sample, profile, export-csv', async () => {
    for (const [role, bound] of [['viewer', true], ['editor', true], ['admin', false]] as const) {
      for (const route of ['/api/tables/m/renamed/sample', '/api/tables/m/renamed/profile', '/api/tables/m/v3/sample', '/api/tables/m/strings/profile']) {
        const r = await srv.s.request('GET', route, undefined, { token: srv.tokens[role] });
        assert.equal(r.status, 200, `${route}: ${r.text.slice(0, 300)}`);
        const leaked = ['ada@example.com', 'navy.mil', 'NAVY.MIL'].filter((v) => r.text.includes(v));
        if (bound) assert.deepEqual(leaked, [], `${route} as ${role}: ${r.text.slice(0, 400)}`);
        else assert.ok(leaked.length > 0, `admin reads raw values on ${route}`);
      }
      const csv = await srv.s.request('POST', '/api/query/export-csv', { sql: 'SELECT contact FROM m.renamed' }, { token: srv.tokens[role] });
      assert.equal(csv.status, 200, csv.text);
      assert.equal(csv.text.includes('ada@example.com'), !bound, csv.text);
    }
  });

  it('derives policies at build time, not per query', async () => {
    await query(srv, 'viewer', 'SELECT contact FROM m.renamed');
    const derived = (srv.s.app.services.get<any>('masking') as any).derivations as () => number;
    const before = derived();
    for (let i = 0; i < 5; i++) {
      const r = await query(srv, 'viewer', `SELECT contact, ${i} AS i FROM m.renamed`);
      assert.equal(r.status, 200, r.text);
    }
    assert.equal(derived(), before, 'queries alone do not derive policies again');
    await srv.s.app.services.get<any>('models').transform({ targets: ['m.pass'] });
    await query(srv, 'viewer', 'SELECT contact FROM m.renamed');
    assert.equal(derived(), before + 1, 'a build derives them again once');
  });

  it('progress events (stream steps, model starts) leave derived policies alone; a finished build does not', async () => {
    await query(srv, 'viewer', 'SELECT contact FROM m.renamed');
    const derived = (srv.s.app.services.get<any>('masking') as any).derivations as () => number;
    const before = derived();
    for (const [type, payload] of [
      ['stream.step_start', { run_id: 'r1', stream: 's', step: 0 }],
      ['transform_start', { run_id: 'r1', models: 1 }],
      ['model_start', { run_id: 'r1', model: 'm.pass' }],
      ['notebook.cell', { path: 'notebooks/a.dpnb' }],
    ] as const) {
      srv.s.app.events.emit(type, payload);
      assert.equal((await query(srv, 'viewer', 'SELECT contact FROM m.renamed')).status, 200);
    }
    assert.equal(derived(), before, 'no progress event re-derives policies');
    srv.s.app.events.emit('model_end', { run_id: 'r1', model: 'm.pass', status: 'success' });
    await query(srv, 'viewer', 'SELECT contact FROM m.renamed');
    assert.equal(derived(), before + 1, 'a model built re-derives them once');
  });

  it('refuses predicates on a derived masked column with 403, like the source column', async () => {
    for (const sql of [
      "SELECT id FROM m.renamed WHERE contact LIKE 'a%'",
      'SELECT id FROM m.v3 ORDER BY e3',
      'SELECT count(*) FROM m.strings GROUP BY domain',
      "SELECT * FROM m.ctes WHERE f = 'ada@example.com'",
    ]) {
      const r = await query(srv, 'viewer', sql);
      assert.equal(r.status, 403, `${sql}: ${r.text}`);
      assert.equal(r.body.error.code, 'masked_column_in_predicate');
      const admin = await query(srv, 'admin', sql);
      assert.equal(admin.status, 200, `${sql} as admin: ${admin.text}`);
    }
    const source = await query(srv, 'viewer', "SELECT id FROM seeds.people WHERE email LIKE 'a%'");
    assert.equal(source.status, 403);
  });

  it('lists derived policies with their source and method (GET ?derived=true)', async () => {
    const r = await srv.s.request('GET', '/api/masking/policies?derived=true', undefined, { token: srv.tokens.viewer });
    assert.equal(r.status, 200, r.text);
    const find = (t: string, c: string) => r.body.find((p: any) => p.schema_name === 'm' && p.table_name === t && p.column_name === c);
    assert.deepEqual(
      (({ method, kind, sources, derived }) => ({ method, kind, sources, derived }))(find('renamed', 'contact')),
      { method: 'partial', kind: 'pass', sources: ['seeds.people.email'], derived: true },
    );
    assert.equal(find('strings', 'up').method, 'redact');
    assert.equal(find('arith', 'double_pay').method, 'null');
    assert.deepEqual(find('v3', 'e3').sources, ['seeds.people.email']);
    assert.equal(find('aggs', 'n_email'), undefined, 'count(col) is not masked');
    assert.equal(find('aggs', 'n'), undefined);
    const plain = await srv.s.request('GET', '/api/masking/policies', undefined, { token: srv.tokens.viewer });
    assert.equal(plain.body.length, 2, 'the plain list holds the explicit policies only');
  });

  it('declassifies one derived column with method none (admin only, reason required and listed)', async () => {
    const body = { schema_name: 'm', table_name: 'strings', column_name: 'domain', method: 'none', reason: 'domains are public' };
    const byEditor = await srv.s.request('POST', '/api/masking/policies', body, { token: srv.tokens.editor });
    assert.equal(byEditor.status, 403, byEditor.text);
    assert.equal(byEditor.body.error.code, 'declassification_admin_only');
    const noReason = await srv.s.request('POST', '/api/masking/policies', { ...body, reason: undefined }, { token: srv.tokens.admin });
    assert.equal(noReason.status, 400, noReason.text);
    assert.equal(noReason.body.error.details.field, 'reason');
    const created = await srv.s.request('POST', '/api/masking/policies', body, { token: srv.tokens.admin });
    assert.equal(created.status, 201, created.text);
    try {
      const listed = await srv.s.request('GET', '/api/masking/policies', undefined, { token: srv.tokens.viewer });
      const mine = listed.body.find((p: any) => p.id === created.body.id);
      assert.equal(mine.reason, 'domains are public');
      assert.equal(mine.method, 'none');
      const viewer = await column(srv, 'viewer', 'strings', 'domain');
      assert.deepEqual(viewer.map((v) => v.value).sort(), ['example.com', 'example.org', 'navy.mil']);
      // The other columns of the model stay masked, and so does the source.
      assert.ok((await column(srv, 'viewer', 'strings', 'up')).every((v) => v.value === '***'));
      assert.equal((await query(srv, 'viewer', 'SELECT email FROM seeds.people WHERE id = 1')).body.rows[0][0], '***************');
      // An editor may not turn another policy into a declassification either.
      const other = (await srv.s.request('GET', '/api/masking/policies', undefined, { token: srv.tokens.admin })).body.find((p: any) => p.column_name === 'email');
      const put = await srv.s.request('PUT', `/api/masking/policies/${other.id}`, { method: 'none', reason: 'x' }, { token: srv.tokens.editor });
      assert.equal(put.status, 403, put.text);
    } finally {
      await srv.s.request('DELETE', `/api/masking/policies/${created.body.id}`, undefined, { token: srv.tokens.admin });
    }
    assert.ok((await column(srv, 'viewer', 'strings', 'domain')).every((v) => v.value === '***'), 'masked again once the declassification is removed');
  });

  it('a model edited to rename a masked column is masked on its next query', async () => {
    const file = path.join(srv.root, 'transform/m/renamed.sql');
    fs.writeFileSync(file, model('SELECT id, email AS reached_by, salary AS pay FROM seeds.people', 'view'));
    // Edited but not rebuilt: the built view still has `contact`, still masked.
    assert.ok((await column(srv, 'viewer', 'renamed', 'contact')).every((v) => v.value !== 'ada@example.com'));
    await srv.s.app.services.get<any>('models').transform({ targets: ['m.renamed'] });
    const viewer = await column(srv, 'viewer', 'renamed', 'reached_by');
    for (const { id, value } of viewer) assert.equal(value, seedMasked.email.get(String(id)));
    const refused = await query(srv, 'viewer', "SELECT id FROM m.renamed WHERE reached_by LIKE 'a%'");
    assert.equal(refused.status, 403, refused.text);
    const admin = await column(srv, 'admin', 'renamed', 'reached_by');
    assert.ok(admin.some((v) => v.value === 'ada@example.com'));
  });
});

describe('masking through lineage: examples/shop', () => {
  after(closeInProcessClis);
  it('a policy on seeds.customers.last_name masks staging and mart columns computed from it', async () => {
    const root = copyShop();
    const srv = await startServerWithRoles(root);
    try {
      const r = await srv.s.request('POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'customers', column_name: 'last_name', method: 'partial' }, { token: srv.tokens.admin });
      assert.equal(r.status, 201, r.text);
      const models = srv.s.app.services.get<any>('models');
      await models.loadSeeds({});
      await models.transform({});
      for (const sql of ['SELECT full_name FROM staging.stg_customers', 'SELECT full_name FROM marts.customer_orders']) {
        const viewer = await query(srv, 'viewer', sql);
        assert.equal(viewer.status, 200, viewer.text);
        assert.ok(viewer.body.rows.length > 0);
        assert.ok(viewer.body.rows.every((row: unknown[]) => row[0] === '***'), `${sql}: ${viewer.text.slice(0, 200)}`);
        assert.ok(!viewer.text.includes('Lovelace'));
        const admin = await query(srv, 'admin', sql);
        assert.ok(admin.text.includes('Ada Lovelace'), admin.text.slice(0, 200));
      }
      const refused = await query(srv, 'viewer', "SELECT customer_id FROM marts.customer_orders WHERE full_name LIKE 'A%'");
      assert.equal(refused.status, 403, refused.text);
      const derived = await srv.s.request('GET', '/api/masking/policies?derived=true', undefined, { token: srv.tokens.viewer });
      const mart = derived.body.find((p: any) => p.schema_name === 'marts' && p.table_name === 'customer_orders' && p.column_name === 'full_name');
      assert.deepEqual(mart.sources, ['seeds.customers.last_name']);
    } finally {
      await srv.s.close();
    }
    // The CLI lists the same derived policies (the server is stopped, so it opens the database itself).
    const cli = await runInProcess(['mask', 'list', '--derived', '--json'], { cwd: root });
    assert.equal(cli.code, 0, cli.stderr);
    const listed = JSON.parse(cli.stdout);
    assert.ok(listed.some((p: any) => p.schema_name === 'staging' && p.table_name === 'stg_customers' && p.column_name === 'full_name' && p.method === 'redact'), cli.stdout);
    const text = await runInProcess(['mask', 'list', '--derived'], { cwd: root });
    assert.match(text.stdout, /stg_customers.*full_name.*redact.*computed.*seeds\.customers\.last_name/);
  });
});
