/**
 * Enforcement rules beyond the attack suite: exemptions, conditional masking, --auth off,
 * cache invalidation on policy and catalog changes, the masking SQL commands, the CRUD API,
 * the post-execution fallback, and the CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { MethodCatalog } from '../../../plugins/masking/catalog.js';
import { postExecutionMask } from '../../../plugins/masking/fallback.js';
import type { MaskingPolicy } from '../../../plugins/masking/policies.js';
import type { Caller } from '../../../sdk/index.js';
import { bootApp, closeInProcessClis, makeProject, runInProcess, startServer } from '../../helpers.js';

after(closeInProcessClis);

const viewer: Caller = { username: 'v', role: 'viewer', authenticated: true };
const editor: Caller = { username: 'e', role: 'editor', authenticated: true };
const admin: Caller = { username: 'a', role: 'admin', authenticated: true };

const FIXTURE = `CREATE SCHEMA crm;
  CREATE TABLE crm.customers (id INTEGER, email VARCHAR, tier VARCHAR, joined DATE);
  INSERT INTO crm.customers VALUES (1, 'ada@example.com', 'vip', DATE '2024-01-05'), (2, 'alan@example.org', 'basic', DATE '2024-02-01');`;

async function rows(app: App, sql: string, caller: Caller) {
  return (await app.queries.run({ sql, caller, purpose: 'query' })).rows;
}

describe('masking enforcement', () => {
  let app: App;
  before(async () => {
    app = await bootApp(makeProject());
    await app.db.run(FIXTURE);
  });
  after(async () => app.close());

  it('answers the masking SQL commands (write permission) and validates them', async () => {
    const created = await app.queries.run({
      sql: `CREATE MASKING POLICY ON crm.customers.email METHOD partial CONFIG '{"show_first": 1}' EXEMPT admin, editor;`,
      caller: admin,
      purpose: 'query',
    });
    assert.equal(created.columns[0], 'id');
    const id = String(created.rows[0][0]);
    assert.match((created as { message?: string }).message ?? '', /created/);
    const shown = await app.queries.run({ sql: 'show masking policies', caller: editor, purpose: 'query' });
    assert.equal(shown.rows.length, 1);
    assert.deepEqual(shown.rows[0].slice(1, 5), ['crm', 'customers', 'email', 'partial']);
    assert.deepEqual(shown.rows[0][8], ['admin', 'editor']);
    assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers ORDER BY id', viewer), [['a**************'], ['a***************']]);
    assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers ORDER BY id', editor), [['ada@example.com'], ['alan@example.org']]);

    await assert.rejects(app.queries.run({ sql: 'SHOW MASKING POLICIES', caller: viewer, purpose: 'query' }), (e: any) => e.status === 403 && e.code === 'insufficient_role');
    await assert.rejects(app.queries.run({ sql: 'CREATE MASKING POLICY ON a.b METHOD hash', caller: admin, purpose: 'query' }), (e: any) => e.code === 'invalid_masking_command');
    await assert.rejects(app.queries.run({ sql: 'CREATE MASKING POLICY ON a.b.c METHOD shred', caller: admin, purpose: 'query' }), (e: any) => e.status === 400 && e.details.field === 'method');
    await assert.rejects(
      app.queries.run({ sql: `CREATE MASKING POLICY ON a.b.c METHOD phone CONFIG '{"show_last": "x"}'`, caller: admin, purpose: 'query' }),
      (e: any) => e.status === 400 && e.details.field === 'method_config.show_last',
    );
    await assert.rejects(app.queries.run({ sql: 'CREATE MASKING POLICY ON a.b.c METHOD hash EXEMPT boss', caller: admin, purpose: 'query' }), (e: any) => e.details.field === 'exempted_roles.0');
    await assert.rejects(app.queries.run({ sql: 'DROP MASKING POLICY nope', caller: admin, purpose: 'query' }), (e: any) => e.status === 404);

    const dropped = await app.queries.run({ sql: `DROP MASKING POLICY '${id}'`, caller: admin, purpose: 'query' });
    assert.equal(dropped.rows[0][0], id);
    assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers ORDER BY id', viewer), [['ada@example.com'], ['alan@example.org']]);
  });

  it('exemptions are per policy; an empty list masks admins too', async () => {
    const svc = app.services.get<{ maskedColumns(c: Caller, s: string, t: string): Promise<string[]> }>('masking');
    await app.queries.run({ sql: 'CREATE MASKING POLICY ON crm.customers.email METHOD redact EXEMPT viewer', caller: admin, purpose: 'query' });
    try {
      assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers ORDER BY id', viewer), [['ada@example.com'], ['alan@example.org']]);
      assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers ORDER BY id', admin), [['***'], ['***']]);
      assert.deepEqual(await svc.maskedColumns(admin, 'crm', 'customers'), ['email']);
      assert.deepEqual(await svc.maskedColumns(viewer, 'crm', 'customers'), []);
    } finally {
      const [[id]] = (await app.queries.run({ sql: 'SHOW MASKING POLICIES', caller: admin, purpose: 'query' })).rows;
      await app.queries.run({ sql: `DROP MASKING POLICY ${id}`, caller: admin, purpose: 'query' });
    }
  });

  it('conditional masking masks only rows where condition_column equals condition_value', async () => {
    const r = await app.queries.run({ sql: 'CREATE MASKING POLICY ON crm.customers.joined METHOD null', caller: admin, purpose: 'query' });
    const id = String(r.rows[0][0]);
    try {
      const res = await fetchPut(app, id, { condition_column: 'tier', condition_value: 'vip' });
      assert.equal(res.condition_column, 'tier');
      assert.deepEqual(await rows(app, 'SELECT id, joined FROM crm.customers ORDER BY id', viewer), [
        [1, null],
        [2, '2024-02-01'],
      ]);
      // The same through late masking (every column names its table): the condition reads the row's own tier.
      assert.deepEqual(await rows(app, 'SELECT c.id, c.joined, upper(c.tier) AS t FROM crm.customers c ORDER BY c.id', viewer), [
        [1, null, 'VIP'],
        [2, '2024-02-01', 'BASIC'],
      ]);
    } finally {
      await app.queries.run({ sql: `DROP MASKING POLICY ${id}`, caller: admin, purpose: 'query' });
    }
  });

  it('re-reads the catalog for a relation created after the last look', async () => {
    const r = await app.queries.run({ sql: 'CREATE MASKING POLICY ON crm.customers.email METHOD hash', caller: admin, purpose: 'query' });
    const id = String(r.rows[0][0]);
    try {
      assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers WHERE id = 1', admin), [['ada@example.com']]);
      assert.deepEqual(await rows(app, 'SELECT email FROM crm.customers LIMIT 1', viewer), await rows(app, "SELECT left(sha256('ada@example.com'), 8)", admin));
      await app.db.run("CREATE TABLE main.fresh AS SELECT 'x@y.z' AS email");
      assert.deepEqual(await rows(app, 'SELECT email FROM fresh', viewer), await rows(app, "SELECT left(sha256('x@y.z'), 8)", admin));
      // Recreated with the column under another name and then back: the cached rewrite must follow.
      await app.db.run("CREATE OR REPLACE TABLE main.fresh AS SELECT 'x@y.z' AS mail");
      app.events.emit('model_end', { model: 'main.fresh' });
      assert.deepEqual(await rows(app, 'SELECT * FROM fresh', viewer), [['x@y.z']]);
      await app.db.run("CREATE OR REPLACE TABLE main.fresh AS SELECT 'x@y.z' AS email");
      app.events.emit('model_end', { model: 'main.fresh' });
      assert.deepEqual(await rows(app, 'SELECT * FROM fresh', viewer), await rows(app, "SELECT left(sha256('x@y.z'), 8)", admin));
    } finally {
      await app.queries.run({ sql: `DROP MASKING POLICY ${id}`, caller: admin, purpose: 'query' });
    }
  });

  it('falls back to masking result columns by name, refusing what it cannot verify', async () => {
    const catalog = new MethodCatalog();
    const policy: MaskingPolicy = {
      id: 'p',
      schema_name: 'crm',
      table_name: 'customers',
      column_name: 'email',
      method: 'email',
      method_config: {},
      condition_column: null,
      condition_value: null,
      exempted_roles: ['admin'],
      created_at: '',
    };
    const t = postExecutionMask(catalog, [policy], 'SELECT id, email FROM crm.customers', 'viewer');
    assert.deepEqual(t(['id', 'EMAIL'], [[1, 'ada@example.com'], [2, null]]), [
      [1, '***@example.com'],
      [2, null],
    ]);
    const aliased = postExecutionMask(catalog, [policy], 'SELECT upper(email) AS x FROM crm.customers', 'viewer');
    assert.throws(() => aliased(['x'], [['ADA@EXAMPLE.COM']]), (e: any) => e.status === 403 && e.details.column === 'email');
    const conditional = postExecutionMask(catalog, [{ ...policy, condition_column: 'tier', condition_value: 'vip' }], 'SELECT * FROM c', 'viewer');
    assert.deepEqual(conditional(['email', 'tier'], [['a@b.c', 'vip'], ['d@e.f', 'basic']]), [
      ['***@b.c', 'vip'],
      ['d@e.f', 'basic'],
    ]);
  });
});

/** The PUT route's handler, called directly: bootApp serves no HTTP. */
async function fetchPut(app: App, id: string, changes: Record<string, unknown>) {
  const route = app.routes.find((r) => r.method === 'PUT' && r.url === '/api/masking/policies/:policy_id')!;
  return (await route.handler({ body: changes, params: { policy_id: id }, query: {}, caller: admin, headers: {}, ip: '', raw: null as never }, null as never)) as MaskingPolicy;
}

describe('masking over HTTP without --auth', () => {
  it('treats the caller as an exempt admin, unless masking.enforce_without_auth is set', async () => {
    for (const enforce of [false, true]) {
      const root = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: t.duckdb\n${enforce ? 'masking:\n  enforce_without_auth: true\n' : ''}` });
      const s = await startServer(root);
      try {
        await s.app.db.run(FIXTURE);
        const p = await s.request('POST', '/api/masking/policies', { schema_name: 'crm', table_name: 'customers', column_name: 'email', method: 'email' });
        assert.equal(p.status, 201, p.text);
        const q = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers ORDER BY id' });
        assert.equal(q.status, 200, q.text);
        assert.deepEqual(q.body.rows, enforce ? [['***@example.com'], ['***@example.org']] : [['ada@example.com'], ['alan@example.org']]);
        const w = await s.request('POST', '/api/query', { sql: "SELECT id FROM crm.customers WHERE email LIKE 'a%'" });
        assert.equal(w.status, enforce ? 403 : 200);
        if (enforce) assert.deepEqual(w.body.error.details.column, 'email');
      } finally {
        await s.close();
      }
    }
  });

  it('CRUD validates method and config, naming the field', async () => {
    const s = await startServer(makeProject());
    try {
      const base = { schema_name: 'crm', table_name: 'customers', column_name: 'email' };
      const missing = await s.request('POST', '/api/masking/policies', { schema_name: 'crm', table_name: 'customers', method: 'hash' });
      assert.equal(missing.status, 400);
      assert.match(missing.text, /column_name/);
      const unknown = await s.request('POST', '/api/masking/policies', { ...base, method: 'shred' });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error.details.field, 'method');
      const badConfig = await s.request('POST', '/api/masking/policies', { ...base, method: 'partial', method_config: { show_first: -2 } });
      assert.equal(badConfig.status, 400);
      assert.equal(badConfig.body.error.details.field, 'method_config.show_first');
      const half = await s.request('POST', '/api/masking/policies', { ...base, method: 'hash', condition_column: 'tier' });
      assert.equal(half.body.error.details.field, 'condition_value');

      const ok = await s.request('POST', '/api/masking/policies', { ...base, method: 'phone' });
      assert.equal(ok.status, 201);
      assert.deepEqual(ok.body.method_config, { show_last: 4 });
      assert.deepEqual(ok.body.exempted_roles, ['admin']);
      assert.match(ok.body.created_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      const dup = await s.request('POST', '/api/masking/policies', { ...base, method: 'hash' });
      assert.equal(dup.status, 409);

      const put = await s.request('PUT', `/api/masking/policies/${ok.body.id}`, { method: 'truncate' });
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(put.body.method_config, { length: 3 });
      const badPut = await s.request('PUT', `/api/masking/policies/${ok.body.id}`, { exempted_roles: ['root'] });
      assert.equal(badPut.body.error.details.field, 'exempted_roles.0');
      const one = await s.request('GET', `/api/masking/policies/${ok.body.id}`);
      assert.equal(one.body.method, 'truncate');
      const all = await s.request('GET', '/api/masking/policies');
      assert.equal(all.body.length, 1);

      const methods = await s.request('GET', '/api/masking/methods');
      assert.equal(methods.body.length, 14);
      assert.deepEqual(methods.body.find((m: { name: string }) => m.name === 'truncate').config_schema.properties.length.default, 3);

      const del = await s.request('DELETE', `/api/masking/policies/${ok.body.id}`);
      assert.equal(del.status, 200);
      assert.equal((await s.request('GET', `/api/masking/policies/${ok.body.id}`)).status, 404);
      assert.equal((await s.request('DELETE', `/api/masking/policies/${ok.body.id}`)).status, 404);
    } finally {
      await s.close();
    }
  });
});

describe('dp mask', () => {
  it('adds, lists and removes policies', async () => {
    const root = makeProject({ 'seeds/customers.csv': 'id,email,ssn\n1,a@example.com,123-45\n' });
    assert.equal((await runInProcess(['seed'], { cwd: root })).code, 0);
    const add = await runInProcess(['mask', 'add', '--schema', 'seeds', '--table', 'customers', '--column', 'email', '--method', 'partial', '--config', '{"show_last": 3}', '--exempt', 'admin,editor', '--json'], { cwd: root });
    assert.equal(add.code, 0, add.stderr);
    const policy = JSON.parse(add.stdout);
    assert.deepEqual(policy.method_config, { show_first: 0, show_last: 3 });
    assert.deepEqual(policy.exempted_roles, ['admin', 'editor']);
    const bad = await runInProcess(['mask', 'add', '--schema', 'seeds', '--table', 'customers', '--column', 'ssn', '--method', 'partial', '--config', '{"show_last": -1}'], { cwd: root });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /method_config\.show_last/);
    const list = await runInProcess(['mask', 'list'], { cwd: root });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /customers/);
    assert.match(list.stdout, /partial/);
    const rm = await runInProcess(['mask', 'remove', '--id', policy.id], { cwd: root });
    assert.equal(rm.code, 0, rm.stderr);
    const empty = await runInProcess(['mask', 'list', '--json'], { cwd: root });
    assert.deepEqual(JSON.parse(empty.stdout), []);
    const missing = await runInProcess(['mask', 'remove', '--id', policy.id], { cwd: root });
    assert.equal(missing.code, 1);
  });

  it('refuses a table or column that does not exist, unless --allow-missing, and says who is exempt and how to check', async () => {
    const root = makeProject({ 'seeds/customers.csv': 'id,name\n1,ann\n' });
    assert.equal((await runInProcess(['seed'], { cwd: root })).code, 0);
    const add = (...extra: string[]) => runInProcess(['mask', 'add', '--schema', 'seeds', '--method', 'redact', ...extra], { cwd: root });
    const table = await add('--table', 'customerz', '--column', 'name');
    assert.equal(table.code, 1);
    assert.match(table.stderr, /No table or view seeds\.customerz in the database \(closest: seeds\.customers\).*--allow-missing/);
    const column = await add('--table', 'customers', '--column', 'nme');
    assert.equal(column.code, 1);
    assert.match(column.stderr, /seeds\.customers has no column 'nme'; its columns: id, name/);
    assert.deepEqual(JSON.parse((await runInProcess(['mask', 'list', '--json'], { cwd: root })).stdout), []);
    const later = await add('--table', 'built_later', '--column', 'x', '--allow-missing');
    assert.equal(later.code, 0, later.stderr);
    const ok = await add('--table', 'customers', '--column', 'name');
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /exempt: admin\)/);
    assert.match(ok.stdout, /dp query --as viewer "SELECT name FROM seeds\.customers LIMIT 5"/);
  });
});
