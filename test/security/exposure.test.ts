/**
 * Data outside the query path (issue 10 points 5, 6, 13; issue 11 point 4 for the files API):
 * every route that reads files, profiles, history tables or configuration is tried by every role
 * against one real server with --auth, a real DuckDB file and real symlinks. Each row names the
 * route, the role and what must (or must never) come back.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';

type Role = 'admin' | 'editor' | 'viewer';
const ROLES: Role[] = ['admin', 'editor', 'viewer'];

const SSNS = ['123-45-6789', '987-65-4321', '555-12-3456'];
const BI_TOKEN = 'tok-9f8e7d6c5b4a3921';
const ENV_SECRET = 'envsecret-77c1d0b2';

const PROJECT_YML = `name: exposure
database:
  path: data/warehouse.db
sources:
  - name: auth
    schema: _service
    freshness_hours: 1
    tables:
      - name: users
        loaded_at_column: password_hash
  - name: people
    schema: seeds
    freshness_hours: 1
    tables:
      - name: people
        loaded_at_column: ssn
exposures:
  - name: bi
    description: Board dashboard
    url: https://bi.example/?key=\${BI_TOKEN}
    depends_on: [seeds.people]
alerts:
  channels: [log]
  on_failure: true
  on_success: false
`;

const CONTRACTS = `contracts:
  - name: people_values
    model: seeds.people
    severity: warn
    assertions:
      - max(ssn)
      - "max(name) || (SELECT min(ssn) FROM seeds.people)"
      - CAST(ssn AS INTEGER) > 0
      - "max(length(ssn)) = 11"
  - name: users_secrets
    model: _service.users
    severity: warn
    assertions:
      - max(password_hash)
`;

describe('security: data outside the query path', () => {
  let s: TestServer;
  let root: string;
  const tokens = {} as Record<Role, string>;
  let hashes: string[] = [];

  const as = (role: Role, method: string, url: string, body?: unknown) => s.request(method, url, body, { token: tokens[role] });
  const noSecrets = (text: string, where: string) => {
    for (const v of [...SSNS, BI_TOKEN, ENV_SECRET, ...hashes]) assert.ok(!text.includes(v), `${where} leaks '${v.slice(0, 12)}…': ${text.slice(0, 400)}`);
    assert.ok(!text.includes(root), `${where} shows the absolute project path`);
  };

  before(async () => {
    root = makeProject({
      'project.yml': PROJECT_YML,
      '.env': `BI_TOKEN=${BI_TOKEN}\nAPI_SECRET=${ENV_SECRET}\n`,
      'seeds/people.csv': `id,name,ssn\n1,Ann,${SSNS[0]}\n2,Bob,${SSNS[1]}\n3,Cy,${SSNS[2]}\n`,
      'data/export.csv': `"SSN",amount\n${SSNS[0]},10\n`,
      'data/colors.csv': 'id,color\n1,red\n',
      'data/semicolon.csv': `\uFEFFid;"Ssn"\n1;${SSNS[0]}\n`,
      'data/people.json': `[{"id": 1, "ssn": "${SSNS[0]}"}]`,
      'contracts/people.yml': CONTRACTS,
      'transform/marts/people_ints.sql': 'SELECT CAST(ssn AS INTEGER) AS n FROM seeds.people',
      'transform/marts/build_log.sql': 'SELECT model, last_status FROM _service.model_freshness',
      '%41.sql': 'SELECT 41',
      '%zz': 'percent file',
      '..dots.sql': 'SELECT 2',
      'data/warehouse.db.tmp/spill.bin': 'spilled rows',
      // A copy of .env (or a hard link left behind when dp rewrote .env: the link keeps the old inode).
      'env-backup.txt': `BI_TOKEN=${BI_TOKEN}\nAPI_SECRET=${ENV_SECRET}\n`,
      'notes/setup.md': `Call the API with the key ${ENV_SECRET} (ask ops).\n`,
    });
    const link = (name: string, target: string) => fs.symlinkSync(target, path.join(root, name));
    link('notes.txt', '.env');
    link('script.sql', '.env');
    link('wal.txt', 'data/warehouse.db.wal');
    link('db.txt', 'data/warehouse.db');
    link('later.txt', '.env.production');
    link('chain.txt', 'notes.txt');
    fs.mkdirSync(path.join(root, 'docs'));
    fs.symlinkSync('../.env', path.join(root, 'docs', 'env.md'));
    link('people-link.csv', 'seeds/people.csv');
    link('colors-link.csv', 'data/colors.csv');
    // dp's own state folder (the user store lives there), reached by name or through a link to it.
    fs.mkdirSync(path.join(root, '.dp'), { recursive: true });
    fs.writeFileSync(path.join(root, '.dp', 'state.sql'), 'SELECT 1');
    link('dp-link', '.dp');
    fs.linkSync(path.join(root, '.env'), path.join(root, 'hard.txt'));

    s = await startServer(root, { auth: true });
    tokens.admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    for (const role of ['editor', 'viewer'] as const) {
      assert.equal((await as('admin', 'POST', '/api/users', { username: role, password: `pw-${role}`, role })).status, 201);
      tokens[role] = (await s.request('POST', '/api/auth/login', { username: role, password: `pw-${role}` })).body.token;
    }
    // Users live in the project's user store; a database from an earlier version still carries
    // its credential tables (sec-engine moves them out only from the environment active at the
    // import), so every route must keep those hidden too.
    const legacyUsers = await s.app.auth.users.database.all<{ username: string; password_hash: string; salt: string; role: string }>(
      'SELECT username, password_hash, salt, role FROM _service.users',
    );
    await s.app.db.run('CREATE TABLE _service.users (username VARCHAR, password_hash VARCHAR, salt VARCHAR, role VARCHAR); CREATE TABLE _service.tokens (token_hash VARCHAR, username VARCHAR)');
    for (const u of legacyUsers) await s.app.db.run('INSERT INTO _service.users VALUES ($1, $2, $3, $4)', [u.username, u.password_hash, u.salt, u.role]);
    await s.app.db.run("INSERT INTO _service.tokens SELECT sha256(username), username FROM _service.users");
    assert.equal((await as('admin', 'POST', '/api/seeds', {})).status, 200);
    const policy = await as('admin', 'POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: 'ssn', method: 'redact' });
    assert.equal(policy.status, 201, policy.text);
    assert.equal((await as('admin', 'POST', '/api/contracts/run')).status, 200);
    await as('admin', 'POST', '/api/transform', {});
    await s.app.services.get<{ drainAlerts(): Promise<void> }>('quality').drainAlerts();
    // Results recorded before values were masked at write time: read-time masking must cover them.
    const legacy = JSON.stringify([{ expression: 'max(ssn)', passed: false, detail: { form: 'expression', value: SSNS[1] } }]);
    await s.app.db.run(
      `INSERT INTO _service.contract_results (id, contract_name, model, passed, severity, detail, checked_at, duration_ms, error)
       VALUES ('legacy-1', 'legacy', 'seeds.people', false, 'warn', $1::JSON, TIMESTAMP '2020-01-01 00:00:00', 1, NULL)`,
      [legacy],
    );
    await s.app.db.run(
      `INSERT INTO _service.assertion_results (id, run_id, model, expression, form, passed, detail, checked_at)
       VALUES ('legacy-2', NULL, 'seeds.people', 'min(ssn)', 'expression', false, $1::JSON, TIMESTAMP '2020-01-01 00:00:00')`,
      [JSON.stringify({ form: 'expression', value: SSNS[2], error: `Could not convert string '${SSNS[0]}' to INT32` })],
    );
    hashes = (await s.app.auth.users.database.all<{ h: string; s: string }>('SELECT password_hash AS h, salt AS s FROM _service.users')).flatMap((r) => [r.h, r.s]);
    assert.ok(hashes.length >= 6);
  });
  after(async () => s.close());

  // ------------------------------------------------------------------ files: symlinks and hidden targets (point 13)

  const protectedLinks = ['.dp/state.sql', 'dp-link/state.sql', 'data/warehouse.db.tmp/spill.bin', 'hard.txt', 'notes.txt', 'wal.txt', 'db.txt', 'later.txt', 'chain.txt', 'docs/env.md', 'data/warehouse.db', 'data/warehouse.db.wal'];
  for (const role of ROLES) {
    for (const file of protectedLinks) {
      it(`${role}: GET /api/files/${file} is refused (hidden or database target)`, async () => {
        const r = await as(role, 'GET', `/api/files/${file}`);
        assert.equal(r.status, 400, r.text);
        assert.equal(r.body.error.code, 'protected_path');
        noSecrets(r.text, file);
      });
    }
  }

  const writes: Array<[string, string, unknown]> = [
    ['PUT', '/api/files/script.sql', { content: 'X=1' }],
    ['DELETE', '/api/files/script.sql', undefined],
    ['DELETE', '/api/files/notes.txt', undefined],
    ['PUT', '/api/files/docs/env.md', { content: 'X=1' }],
  ];
  for (const [method, url, body] of writes) {
    it(`admin: ${method} ${url} through a link to .env is refused and changes nothing`, async () => {
      const before = fs.readFileSync(path.join(root, '.env'), 'utf8');
      const r = await as('admin', method, url, body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'protected_path');
      assert.equal(fs.readFileSync(path.join(root, '.env'), 'utf8'), before);
      assert.ok(fs.lstatSync(path.join(root, url.slice('/api/files/'.length))).isSymbolicLink(), 'the link itself is still there');
    });
  }

  const stateWrites: Array<[string, string]> = [
    ['PUT', '.dp/new.sql'],
    ['PUT', 'dp-link/new.sql'],
    ['PUT', 'dp-link/state.sql'],
    ['DELETE', 'dp-link/state.sql'],
  ];
  for (const [method, file] of stateWrites) {
    it(`editor: ${method} /api/files/${file} (dp's state folder) is refused and changes nothing`, async () => {
      const r = await as('editor', method, `/api/files/${file}`, method === 'PUT' ? { content: 'SELECT 2' } : undefined);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'protected_path');
      assert.deepEqual(fs.readdirSync(path.join(root, '.dp')).filter((f) => f.endsWith('.sql')), ['state.sql']);
      assert.equal(fs.readFileSync(path.join(root, '.dp', 'state.sql'), 'utf8'), 'SELECT 1');
    });
  }

  it('the tree lists links only when the file they reach could be read', async () => {
    const r = await as('viewer', 'GET', '/api/files');
    const flat: string[] = [];
    const walk = (nodes: Array<{ path: string; children?: unknown[] }>) => nodes.forEach((n) => (flat.push(n.path), n.children && walk(n.children as never)));
    walk(r.body.children);
    for (const p of ['hard.txt', 'notes.txt', 'script.sql', 'wal.txt', 'db.txt', 'later.txt', 'chain.txt', 'docs/env.md', 'data/warehouse.db']) assert.ok(!flat.includes(p), `${p} listed`);
    assert.ok(flat.includes('colors-link.csv') && flat.includes('data/colors.csv'), flat.join(','));
  });

  // ------------------------------------------------------------------ files: .env values in other files (point 6)

  const secretCopies: Array<{ file: string; shows: string }> = [
    { file: 'env-backup.txt', shows: 'API_SECRET=${API_SECRET}' },
    { file: 'notes/setup.md', shows: 'the key ${API_SECRET} (ask ops)' },
  ];
  for (const { file, shows } of secretCopies) {
    for (const role of ROLES) {
      it(`${role}: GET /api/files/${file} shows a .env value as its \${NAME} reference`, async () => {
        const r = await as(role, 'GET', `/api/files/${file}`);
        assert.equal(r.status, 200, r.text);
        noSecrets(r.text, file);
        assert.ok(r.body.content.includes(shows), r.body.content);
      });
    }
  }

  // ------------------------------------------------------------------ files: raw copies of masked columns (point 6)

  const dataFiles: Array<{ file: string; allowed: Role[] }> = [
    { file: 'seeds/people.csv', allowed: ['admin'] },
    { file: 'people-link.csv', allowed: ['admin'] },
    { file: 'data/export.csv', allowed: ['admin'] },
    { file: 'data/semicolon.csv', allowed: ['admin'] },
    { file: 'data/people.json', allowed: ['admin'] },
    { file: 'data/colors.csv', allowed: ['admin', 'editor', 'viewer'] },
  ];
  for (const { file, allowed } of dataFiles) {
    for (const role of ROLES) {
      const may = allowed.includes(role);
      it(`${role}: GET /api/files/${file} ${may ? 'is served' : 'is refused (holds a column masked for the role)'}`, async () => {
        const r = await as(role, 'GET', `/api/files/${file}`);
        if (may) {
          assert.equal(r.status, 200, r.text);
        } else {
          assert.equal(r.status, 403, r.text);
          assert.equal(r.body.error.code, 'masked_data_file');
          noSecrets(r.text, file);
        }
      });
    }
  }

  // ------------------------------------------------------------------ files: bad names (issue 11 point 4)

  const longName = `${'a'.repeat(300)}.sql`;
  const badNames: Array<[string, string, unknown, number, string]> = [
    ['GET', `/api/files/${longName}`, undefined, 400, 'name_too_long'],
    ['PUT', `/api/files/${longName}`, { content: 'SELECT 1' }, 400, 'name_too_long'],
    ['DELETE', `/api/files/${longName}`, undefined, 400, 'name_too_long'],
    ['GET', `/api/files/transform/${longName}`, undefined, 400, 'name_too_long'],
    ['GET', `/api/files/${'d/'.repeat(600)}x.sql`, undefined, 400, 'path_too_long'],
    ['GET', '/api/files/%25zz', undefined, 200, ''],
    ['GET', '/api/files/%2541.sql', undefined, 200, ''],
    ['GET', '/api/files/..dots.sql', undefined, 200, ''],
    ['GET', '/api/files/%41.sql', undefined, 404, 'file_not_found'],
  ];
  for (const [method, url, body, status, code] of badNames) {
    it(`editor: ${method} ${url.slice(0, 60)}${url.length > 60 ? '…' : ''} answers ${status}${code ? ` ${code}` : ''}`, async () => {
      const r = await as('editor', method, url, body);
      assert.equal(r.status, status, r.text.slice(0, 300));
      if (code) assert.equal(r.body.error.code, code);
      assert.ok(!r.text.includes(root), 'no absolute path in the answer');
    });
  }

  it('a path is decoded once: %41.sql is read as the file named %41.sql', async () => {
    const r = await as('viewer', 'GET', '/api/files/%2541.sql');
    assert.equal(r.body.path, '%41.sql');
    assert.equal(r.body.content, 'SELECT 41');
  });

  // ------------------------------------------------------------------ _service and profiles (point 5)

  const internal: Array<{ url: string; status: Record<Role, number> }> = [
    { url: '/api/tables/_service/users/profile', status: { admin: 403, editor: 404, viewer: 404 } },
    // Names resolve case-insensitively, as in DuckDB: the upper-case spelling is the same internal table.
    { url: '/api/tables/_SERVICE/users/profile', status: { admin: 403, editor: 404, viewer: 404 } },
    { url: '/api/tables/_service/tokens/profile', status: { admin: 403, editor: 404, viewer: 404 } },
    { url: '/api/profiles/_service.users', status: { admin: 403, editor: 404, viewer: 404 } },
    { url: '/api/tables/_service/contract_results/profile', status: { admin: 200, editor: 404, viewer: 404 } },
    { url: '/api/tables/_service/users', status: { admin: 404, editor: 404, viewer: 404 } },
    { url: '/api/tables/_service/users/sample', status: { admin: 404, editor: 404, viewer: 404 } },
    { url: '/api/assertions/_service.users', status: { admin: 200, editor: 404, viewer: 404 } },
    { url: '/api/quality/assertion-debug/_service.users', status: { admin: 200, editor: 404, viewer: 404 } },
    { url: '/api/anomalies/_service.users', status: { admin: 200, editor: 404, viewer: 404 } },
    { url: '/api/impact/_service.users', status: { admin: 404, editor: 404, viewer: 404 } },
    { url: '/api/impact/_service.model_freshness', status: { admin: 200, editor: 404, viewer: 404 } },
    { url: '/api/lineage/_service.model_freshness', status: { admin: 404, editor: 404, viewer: 404 } },
  ];
  for (const { url, status } of internal) {
    for (const role of ROLES) {
      it(`${role}: GET ${url} answers ${status[role]} and never a hash or salt`, async () => {
        const r = await as(role, 'GET', url);
        assert.equal(r.status, status[role], r.text.slice(0, 300));
        noSecrets(r.text, url);
      });
    }
  }

  it('admin: a profile of an internal table shows counts, never values', async () => {
    const r = await as('admin', 'GET', '/api/tables/_service/contract_results/profile');
    assert.ok(r.body.columns.length > 0);
    for (const c of r.body.columns) assert.deepEqual([c.min, c.max, c.sample_values], [null, null, []], c.name);
  });

  const listings = ['/api/lineage/marts.build_log', '/api/tables', '/api/autocomplete', '/api/profiles', '/api/freshness', '/api/sources/freshness', '/api/anomalies', '/api/assertions', '/api/contracts', '/api/contracts/history', '/api/dag/full', '/api/lineage', '/api/alerts'];
  for (const url of listings) {
    for (const role of ['editor', 'viewer'] as const) {
      it(`${role}: GET ${url} names nothing in _service and shows no secret or masked value`, async () => {
        const r = await as(role, 'GET', url);
        assert.equal(r.status, 200, r.text.slice(0, 300));
        assert.ok(!/_service\./i.test(r.text) && !/"_service"/i.test(r.text), `${url}: ${r.text.slice(0, 400)}`);
        noSecrets(r.text, url);
      });
    }
    it(`admin: GET ${url} shows no secret`, async () => {
      const r = await as('admin', 'GET', url);
      assert.equal(r.status, 200, r.text.slice(0, 300));
      for (const v of [BI_TOKEN, ENV_SECRET, ...hashes]) assert.ok(!r.text.includes(v), `${url} leaks a secret to an admin`);
    });
  }

  // ------------------------------------------------------------------ masked values in stored results (point 6)

  it('viewer: contract history holds the verdicts but not the values of masked columns', async () => {
    const r = await as('viewer', 'GET', '/api/contracts/history');
    const run = r.body.history.find((h: { contract_name: string }) => h.contract_name === 'people_values');
    assert.ok(run, r.text.slice(0, 300));
    const byExpr = Object.fromEntries(run.detail.map((a: { expression: string; detail: unknown }) => [a.expression, a.detail]));
    assert.equal(byExpr['max(ssn)'].value, '***');
    assert.equal(byExpr['max(name) || (SELECT min(ssn) FROM seeds.people)'].value, '***', 'a subquery may read masked columns');
    assert.equal(byExpr['max(length(ssn)) = 11'].value, true, 'a boolean verdict is kept');
    assert.match(byExpr['CAST(ssn AS INTEGER) > 0'].error, /\*\*\*/);
  });

  for (const [role, masked] of [['viewer', true], ['editor', true], ['admin', false]] as const) {
    it(`${role}: results stored before masking are masked ${masked ? '' : 'not '}on read`, async () => {
      const history = await as(role, 'GET', '/api/contracts/history?contract=legacy');
      assert.equal(history.body.history[0].detail[0].detail.value, masked ? '***' : SSNS[1]);
      const assertions = await as(role, 'GET', '/api/assertions/seeds.people');
      const row = assertions.body.results.find((r: { id: string }) => r.id === 'legacy-2');
      assert.equal(row.detail.value, masked ? '***' : SSNS[2]);
      assert.equal(row.detail.error.includes(SSNS[0]), !masked);
    });
  }

  it('viewer: the profile of a table with a policy withholds min/max of the masked column', async () => {
    const r = await as('viewer', 'GET', '/api/tables/seeds/people/profile');
    const ssn = r.body.columns.find((c: { name: string }) => c.name === 'ssn');
    assert.equal(ssn.masked, true);
    noSecrets(r.text, 'profile');
  });

  it('viewer: source freshness of a masked loaded_at_column shows the status only', async () => {
    const r = await as('viewer', 'GET', '/api/sources/freshness');
    const people = r.body.sources.find((x: { table: string }) => x.table === 'people');
    assert.equal(people.masked, true);
    assert.equal(people.max_loaded_at, null);
  });

  it('viewer: the failed build alert does not quote the masked value', async () => {
    const r = await as('viewer', 'GET', '/api/alerts');
    assert.ok(r.body.alerts.some((a: { alert_type: string }) => a.alert_type === 'pipeline_failure'), r.text.slice(0, 300));
    noSecrets(r.text, '/api/alerts');
  });

  // ------------------------------------------------------------------ .env values in the DAG (point 6)

  for (const role of ROLES) {
    it(`${role}: /api/dag/full shows the \${BI_TOKEN} reference, never its value`, async () => {
      const r = await as(role, 'GET', '/api/dag/full');
      const bi = r.body.nodes.find((n: { id: string }) => n.id === 'exposure:bi');
      assert.equal(bi.url, 'https://bi.example/?key=${BI_TOKEN}');
      assert.ok(!r.text.includes(BI_TOKEN));
    });
  }
});
