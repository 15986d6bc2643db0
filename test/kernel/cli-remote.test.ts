/**
 * The CLI beside a running server (issue 20, docs/cli.md): the real `dp` binary against a real
 * `dp serve` on 127.0.0.1. A table of commands runs first with no server (the CLI opens the
 * file), then with the server holding the database: stdout, exit code and --json must match.
 * The offline side of the command table runs in this process (cliInProcess: the same commands
 * on an App of the project, closed before a server opens the file); every run through a server
 * is the binary's entry in a process of its own, since the relay is the point, and so is
 * `dp users` (a command of the binary). Those runs share one such process for the whole file
 * (startDpRelay: each command line through the binary's entry, in turn), so the file's forty-odd
 * command lines cost one process start, not forty.
 */
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { builtShop, cliInProcess, copyShop, DP_BIN, fileDpRelay, spawnServe, tempDir, type CliRun } from '../helpers.js';

const SERVER_FILE = path.join('.dp', 'server.json');

/** The file's `dp` process for every command line beside a server (and `dp users`): started on first use. */
const dp = fileDpRelay();
/** Command lines in the file's `dp` process, in order: what `runCliBatch` answers. */
const runCliBatch = (runs: CliRun[]) => dp.batch(runs);
/** A command line in the file's `dp` process: what `runCli` answers. */
const runCli = (args: string[]) => dp.run(args);

/** Timings and timestamps differ between any two runs; everything else must be equal. */
function normalize(text: string): string {
  return text
    .replace(/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}(:?\d{2})?)?/g, '<time>')
    .replace(/\d+(\.\d+)? ?ms\b/g, '<n> ms')
    .replace(/"(duration_ms|ms|elapsed_ms|started_at|finished_at|checked_at|run_id|id)": [^,\n}]+/g, '"$1": <v>');
}

interface Served {
  child: ChildProcess;
  url: string;
  stop(): Promise<number | null>;
}

/** `dp serve` as its own process (the database lock is per process), on a free port. */
async function serve(root: string, extra: string[] = []): Promise<Served> {
  const served = await spawnServe(root, { args: extra });
  return { child: served.child, url: served.url, stop: async () => (await served.stop()).code };
}

/** `dp mcp` of the real binary, driven by the MCP SDK's client over stdio. */
async function mcpOverStdio(root: string, env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [DP_BIN, 'mcp', '--project', root],
    env: { ...(process.env as Record<string, string>), DP_LOG_SILENT: '1', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'dp-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** The commands compared; each is run offline and through the server, in this order. */
const TABLE: string[][] = [
  ['query', 'SELECT 1 AS x'],
  ['--json', 'query', 'SELECT customer_id, email FROM seeds.customers ORDER BY customer_id LIMIT 3'],
  ['query', 'SELECT email FROM seeds.customers ORDER BY customer_id LIMIT 2'],
  ['query', '--csv', 'SELECT customer_id, country FROM seeds.customers ORDER BY customer_id'],
  ['query', 'SELEC nothing'],
  ['tables'],
  ['--json', 'tables'],
  ['lineage', 'marts.customer_orders'],
  ['--json', 'lineage', 'marts.customer_orders'],
  ['impact', 'staging.stg_orders'],
  ['check'],
  ['--json', 'check'],
  ['contracts'],
  ['--json', 'contracts'],
  ['mask', 'list'],
  ['--json', 'mask', 'list'],
  ['metrics'],
  ['status'],
  ['validate'],
  ['docs'],
  ['seed'],
  ['transform'],
  ['--json', 'transform'],
  ['lineage', 'marts.no_such_model'],
];

type Outcome = { code: number; stdout: string };

/** The table's command lines on the project, as `env`'s user. */
const tableRuns = (root: string, env: Record<string, string> = {}): CliRun[] => TABLE.map((args) => ({ args: [...args, '--project', root], env }));

/** Batch results as the table compares them (normalized stdout). */
const asOutcomes = (results: Array<{ code: number; stdout: string; stderr: string }>) => results.map((r) => ({ code: r.code, stdout: normalize(r.stdout), stderr: r.stderr }));

/** `steps` in this process on one App of the project, closed after (so a server can open the file). */
async function runOffline(root: string, steps: string[][]): Promise<Array<{ code: number; stdout: string; stderr: string }>> {
  const cli = cliInProcess(root);
  try {
    const outcomes = [];
    for (const args of steps) outcomes.push(await cli.run([...args, '--project', root]));
    return outcomes;
  } finally {
    await cli.close();
  }
}

/** Runs `steps` offline and asserts that each succeeded. */
async function offlineOk(root: string, steps: string[][]): Promise<void> {
  const outcomes = await runOffline(root, steps);
  outcomes.forEach((r, i) => assert.equal(r.code, 0, `${steps[i].join(' ')}: ${r.stderr}`));
}

function assertSameOutcomes(offline: Outcome[], served: Outcome[], label: string): void {
  TABLE.forEach((args, i) => {
    const what = `dp ${args.join(' ')} (${label})`;
    assert.equal(served[i].code, offline[i].code, `${what}: exit code; stderr: ${(served[i] as { stderr?: string }).stderr}`);
    assert.equal(served[i].stdout, offline[i].stdout, `${what}: stdout`);
  });
}

/** One project for both suites, and its offline outcomes (run once). */
let shared: Promise<{ root: string; offline: Outcome[] }> | null = null;
function prepared(): Promise<{ root: string; offline: Outcome[] }> {
  shared ??= (async () => {
    // Seeded and transformed already (the suite run's template).
    const root = await builtShop();
    await offlineOk(root, [['mask', 'add', '--schema', 'seeds', '--table', 'customers', '--column', 'email', '--method', 'redact', '--exempt', 'admin,editor']]);
    const outcomes = await runOffline(root, TABLE);
    return { root, offline: outcomes.map((r) => ({ code: r.code, stdout: normalize(r.stdout), stderr: r.stderr })) };
  })();
  return shared;
}

describe('the CLI beside a running dp serve (no auth)', () => {
  let root: string;
  let offline: Outcome[];
  let server: Served | null = null;

  before(async () => {
    ({ root, offline } = await prepared());
    // The table covers success and failure both.
    assert.ok(offline.some((o) => o.code === 0) && offline.some((o) => o.code !== 0));
  });
  after(async () => {
    await server?.stop();
  });

  it('runs every command of the table through the server with the same stdout, exit code and --json', async () => {
    server = await serve(root);
    const file = path.join(root, SERVER_FILE);
    const st = fs.statSync(file);
    assert.equal(st.mode & 0o777, 0o600, 'the credential file is readable by its owner only');
    const info = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.equal(info.url, server.url);
    assert.equal(info.pid, server.child.pid);
    assert.match(info.token, /^[A-Za-z0-9_-]{40,}$/);

    assertSameOutcomes(offline, asOutcomes(await runCliBatch(tableRuns(root))), 'through dp serve');
  });

  it('the command route refuses a caller without the local token, and an unknown or local-only command', async () => {
    const token = JSON.parse(fs.readFileSync(path.join(root, SERVER_FILE), 'utf8')).token as string;
    const call = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${server!.url}/api/cli/run`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const anonymous = await call({ command: 'query', args: { sql: 'SELECT 1', limit: 10 } });
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: { code: string } }).error.code, 'local_token_required');
    const wrong = await call({ command: 'query', args: { sql: 'SELECT 1', limit: 10 } }, { 'x-dp-local-token': token.slice(0, -2) + 'xx' });
    assert.equal(wrong.status, 401);
    const unknown = await call({ command: 'no-such', args: {} }, { 'x-dp-local-token': token });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'unknown_command');

    const restore = await runCli(['backup-restore', 'backups/x.duckdb', '--project', root]);
    assert.equal(restore.code, 1);
    assert.match(restore.stderr, /cannot run through the running server: it replaces the database file/);
  });

  it('dp mcp relays stdio to the running server (the SDK client drives it)', async () => {
    const client = await mcpOverStdio(root, {});
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('run_transform') && names.includes('query'));
      // The server holds the file: a local dp mcp could not answer this.
      const q = (await client.callTool({ name: 'query', arguments: { sql: 'SELECT count(*) AS n FROM seeds.customers' } })) as { isError?: boolean; content: Array<{ text: string }> };
      assert.ok(!q.isError, q.content[0].text);
      assert.equal(Number(JSON.parse(q.content[0].text).rows[0][0]), 10);
      const docs = await client.readResource({ uri: 'dp://docs/project' });
      assert.ok(docs.contents.length === 1);
    } finally {
      await client.close();
    }
  });

  it('ignores a credential file other users may read (and says so)', async () => {
    const file = path.join(root, SERVER_FILE);
    fs.chmodSync(file, 0o644);
    try {
      const r = await runCli(['query', 'SELECT 1', '--project', root]);
      assert.match(r.stderr, /ignoring \.dp\/server\.json: other users may read it \(mode 644/);
      // Not trusted, so the CLI opens the file itself, which the server holds.
      assert.equal(r.code, 1);
      assert.match(r.stderr, /in use by another process|database_locked|lock/i);
    } finally {
      fs.chmodSync(file, 0o600);
    }
    assert.equal((await runCli(['query', 'SELECT 1', '--project', root])).code, 0);
  });

  it('removes the file on a clean shutdown, and a stale file (dead pid, or a server that does not answer) is ignored', async () => {
    assert.equal(await server!.stop(), 0);
    server = null;
    const file = path.join(root, SERVER_FILE);
    assert.ok(!fs.existsSync(file), 'clean shutdown removes .dp/server.json');

    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const stale = { url: 'http://127.0.0.1:9', host: '127.0.0.1', port: 9, pid: Number(dead.stdout), project_root: fs.realpathSync(root), token: 'x'.repeat(43), auth: false, started_at: new Date().toISOString() };
    fs.writeFileSync(file, JSON.stringify(stale), { mode: 0o600 });
    let r = await runCli(['--json', 'query', 'SELECT 42 AS answer', '--project', root]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).rows[0][0], 42);

    // A live pid (this test's own process) whose address answers nothing: also stale.
    fs.writeFileSync(file, JSON.stringify({ ...stale, pid: process.pid }), { mode: 0o600 });
    r = await runCli(['query', 'SELECT 1', '--project', root]);
    assert.equal(r.code, 0, r.stderr);
    fs.rmSync(file);
  });
});

describe('the CLI beside a running dp serve --auth (dp login)', () => {
  let root: string;
  let offline: Outcome[];
  let server: Served | null = null;
  let config: string;
  const as = () => ({ XDG_CONFIG_HOME: config });

  before(async () => {
    ({ root, offline } = await prepared());
    const added = await runCliBatch(
      [
        ['ada', 'admin'],
        ['ed', 'editor'],
        ['vic', 'viewer'],
      ].map(([user, role]) => ({ args: ['users', 'add', user, '--role', role, '--password', `pw-${user}-1`, '--project', root] })),
    );
    for (const r of added) assert.equal(r.code, 0, r.stderr);
    config = tempDir('dp-test-config-');
    server = await serve(root, ['--auth']);
  });
  after(async () => {
    await server?.stop();
    fs.rmSync(config, { recursive: true, force: true });
  });

  it('asks for a login first, then runs the table as the logged-in editor with the same results as offline', async () => {
    const [before, bad, ok] = await runCliBatch([
      { args: ['query', 'SELECT 1', '--project', root], env: as() },
      { args: ['login', '--username', 'ed', '--password-stdin', '--project', root], env: as(), input: 'wrong-password\n' },
      { args: ['login', '--username', 'ed', '--password-stdin', '--project', root], env: as(), input: 'pw-ed-1\n' },
    ]);
    assert.equal(before.code, 1);
    assert.match(before.stderr, /runs with --auth: log in with 'dp login' first/);
    assert.equal(bad.code, 1);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /Logged in to http:\/\/127\.0\.0\.1:\d+ as ed \(editor\)/);

    // The token lives in the user's config folder, private, and nowhere in the project.
    const file = path.join(config, 'dp', 'credentials.json');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const stored = Object.values(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, { token: string }>);
    assert.equal(stored.length, 1);
    const inProject = spawnSync('grep', ['-rl', '--binary-files=without-match', stored[0].token, root], { encoding: 'utf8' });
    assert.equal(inProject.stdout, '', 'the login token is not written into the project');

    // After the table: a logged-in editor's `dp promote <file>` reads only files inside the project.
    const outsideSql = path.join(tempDir('dp-outside-'), 'secret.sql');
    fs.writeFileSync(outsideSql, "SELECT 'outside-the-project' AS secret");
    const served = await runCliBatch([...tableRuns(root, as()), { args: ['promote', outsideSql, '--name', 'leak', '--schema', 'marts', '--project', root], env: as() }]);
    const promoted = served.pop()!;
    assertSameOutcomes(offline, asOutcomes(served), 'logged in as an editor');

    assert.equal(promoted.code, 1, promoted.stdout);
    assert.ok(!fs.existsSync(path.join(root, 'transform', 'marts', 'leak.sql')), 'nothing written from outside the project');
  });

  it("a viewer's login runs read commands (masked) and is refused transform, seed and writing commands", async () => {
    const writing = [['seed'], ['check'], ['mask', 'add', '--schema', 'seeds', '--table', 'orders', '--column', 'status', '--method', 'redact'], ['docs', '--out', 'docs.md']];
    const run = (args: string[], input?: string): CliRun => ({ args: [...args, '--project', root], env: as(), input });
    const [login, transform, ...rest] = await runCliBatch([
      run(['login', '--username', 'vic', '--password-stdin'], 'pw-vic-1\n'),
      run(['transform']),
      ...writing.map((args) => run(args)),
      run(['tables']),
      run(['--json', 'query', 'SELECT email FROM seeds.customers ORDER BY customer_id LIMIT 2']),
      run(['query', '@/etc/hostname']),
    ]);
    const refused = rest.slice(0, writing.length);
    const [tables, viewer, outside] = rest.slice(writing.length);
    assert.equal(login.code, 0, login.stderr);

    assert.equal(transform.code, 1);
    assert.match(transform.stderr, /'dp transform' needs the 'execute' permission; role 'viewer' does not have it/);
    writing.forEach((args, i) => {
      assert.equal(refused[i].code, 1, `dp ${args.join(' ')} as a viewer`);
      assert.match(refused[i].stderr, /permission; role 'viewer' does not have it/);
    });
    assert.ok(!fs.existsSync(path.join(root, 'docs.md')));

    assert.equal(tables.code, 0, tables.stderr);
    // Masking applies to the viewer's own queries: the emails the editor saw are redacted.
    assert.equal(viewer.code, 0, viewer.stderr);
    const emails = (JSON.parse(viewer.stdout).rows as string[][]).map((r) => r[0]);
    assert.equal(emails.length, 2);
    for (const e of emails) assert.ok(!/@example\.com$/.test(e), `masked for a viewer: ${e}`);
    // A viewer cannot read a file outside the project through `dp query @file`.
    assert.equal(outside.code, 1);
  });

  it("dp mcp relays as the logged-in viewer: no run_transform, masked query", async () => {
    const client = await mcpOverStdio(root, as());
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('query'));
      assert.ok(!names.includes('run_transform') && !names.includes('check'), names.join(' '));
      const q = (await client.callTool({ name: 'query', arguments: { sql: 'SELECT email FROM seeds.customers ORDER BY customer_id LIMIT 1' } })) as { isError?: boolean; content: Array<{ text: string }> };
      assert.ok(!q.isError, q.content[0].text);
      assert.doesNotMatch(q.content[0].text, /@example\.com/);
    } finally {
      await client.close();
    }
  });

  it('dp logout revokes the token and forgets it', async () => {
    const file = path.join(config, 'dp', 'credentials.json');
    const token = Object.values(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, { token: string }>)[0].token;
    const [out, after] = await runCliBatch([
      { args: ['logout', '--project', root], env: as() },
      { args: ['query', 'SELECT 1', '--project', root], env: as() },
    ]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /Logged out vic/);
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), {});
    assert.equal(after.code, 1);
    assert.match(after.stderr, /dp login/);
    // Revoked at the server too, not only forgotten.
    const me = await fetch(`${server!.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(me.status, 401);
  });
});

/** `dp users` steps, compared offline and through the server; each project starts with admin `root` and editor `ed`. */
const USERS_TABLE: Array<{ args: string[]; input?: string }> = [
  { args: ['users', 'list'] },
  { args: ['users', 'add', 'ann', '--role', 'admin', '--password', 'pw-ann-123', '--display-name', 'Ann A'] },
  { args: ['--json', 'users', 'add', 'bob', '--role', 'viewer'], input: 'pw-bob-123\n' },
  { args: ['users', 'add', 'bob', '--role', 'editor', '--password', 'pw-bob-456'] },
  { args: ['users', 'add', 'cy', '--role', 'viewer', '--password', 'abc'] },
  { args: ['users', 'list'] },
  { args: ['--json', 'users', 'list'] },
  { args: ['users', 'set-role', 'bob', 'editor'] },
  { args: ['--json', 'users', 'set-role', 'bob', 'viewer'] },
  { args: ['users', 'set-password', 'bob'], input: 'pw-bob-789\n' },
  { args: ['users', 'set-password', 'bob', '--password', 'abc'] },
  { args: ['users', 'set-role', 'nobody', 'viewer'] },
  { args: ['users', 'remove', 'bob'] },
  { args: ['--json', 'users', 'remove', 'ann'] },
  { args: ['users', 'remove', 'ann'] },
  { args: ['users', 'set-role', 'root', 'editor'] },
  { args: ['--json', 'users', 'list'] },
];

type UsersOutcome = { code: number; stdout: string; stderr: string };

async function usersProject(): Promise<string> {
  const root = copyShop();
  const added = await runCliBatch(
    [
      ['root', 'admin'],
      ['ed', 'editor'],
    ].map(([user, role]) => ({ args: ['users', 'add', user, '--role', role, '--password', `pw-${user}-123`, '--project', root] })),
  );
  for (const r of added) assert.equal(r.code, 0, r.stderr);
  return root;
}

/** The users table's command lines on the project, as `env`'s user. */
const usersRuns = (root: string, env: Record<string, string> = {}): CliRun[] => USERS_TABLE.map(({ args, input }) => ({ args: [...args, '--project', root], env, input: input ?? '' }));

/** `dp login` stamps the user's last_login, which no offline run does: the --auth comparison leaves it out. */
function withoutLastLogin(stdout: string): string {
  const lines = stdout.split('\n');
  const column = lines[0].startsWith('username ') ? lines[0].indexOf('last_login') : -1;
  const cut = column < 0 ? stdout : lines.map((l) => l.slice(0, column).trimEnd()).join('\n');
  return cut.replace(/"last_login": [^,\n}]+/g, '"last_login": <v>');
}

function assertSameUsersOutcomes(offline: UsersOutcome[], served: UsersOutcome[], label: string, view: (stdout: string) => string = (s) => s): void {
  USERS_TABLE.forEach(({ args }, i) => {
    const what = `dp ${args.join(' ')} (${label})`;
    assert.equal(served[i].code, offline[i].code, `${what}: exit code; stderr: ${served[i].stderr}`);
    assert.equal(normalize(view(served[i].stdout)), normalize(view(offline[i].stdout)), `${what}: stdout`);
    // Refusals read the same too: the store's checks and messages, whichever side made them.
    assert.equal(served[i].stderr, offline[i].stderr, `${what}: stderr`);
  });
}

describe('dp users beside a running dp serve', () => {
  let offline: UsersOutcome[];
  const servers: Served[] = [];
  const configs: string[] = [];

  before(async () => {
    offline = await runCliBatch(usersRuns(await usersProject()));
    assert.ok(offline.filter((o) => o.code === 0).length >= 8 && offline.filter((o) => o.code === 1).length >= 5, JSON.stringify(offline));
  });
  after(async () => {
    for (const s of servers) await s.stop();
    for (const c of configs) fs.rmSync(c, { recursive: true, force: true });
  });

  it('without --auth: the same stdout, stderr and exit codes as offline (the local token)', async () => {
    const root = await usersProject();
    const server = await serve(root);
    servers.push(server);
    // The server opens the user store on first use: make it hold the file before the CLI runs.
    const names = async () => ((await (await fetch(`${server.url}/api/users`)).json()) as Array<{ username: string }>).map((u) => u.username);
    assert.deepEqual(await names(), ['ed', 'root']);
    assertSameUsersOutcomes(offline, await runCliBatch(usersRuns(root)), 'through dp serve');
  });

  it('with --auth: the same as offline for a logged-in admin; an editor is refused, and nobody without a login', async () => {
    const root = await usersProject();
    const config = tempDir('dp-test-config-');
    configs.push(config);
    const env = { XDG_CONFIG_HOME: config };
    servers.push(await serve(root, ['--auth']));

    const asEditor = [['users', 'list'], ['users', 'add', 'zed', '--role', 'admin', '--password', 'pw-zed-123'], ['users', 'set-role', 'ed', 'admin']];
    const run = (args: string[], input?: string): CliRun => ({ args: [...args, '--project', root], env, input });
    const results = await runCliBatch([
      run(['users', 'list']),
      run(['login', '--username', 'ed', '--password-stdin'], 'pw-ed-123\n'),
      ...asEditor.map((args) => run(args)),
      run(['login', '--username', 'root', '--password-stdin'], 'pw-root-123\n'),
      ...usersRuns(root, env),
      run(['--json', 'users', 'list']),
    ]);
    const [anonymous, ed] = results.splice(0, 2);
    const refused = results.splice(0, asEditor.length);
    const [admin] = results.splice(0, 1);
    const list = results.pop()!;

    assert.equal(anonymous.code, 1);
    assert.match(anonymous.stderr, /^error: .*log in with 'dp login' first/m);
    assert.equal(ed.code, 0, ed.stderr);
    asEditor.forEach((args, i) => {
      const r = refused[i];
      assert.equal(r.code, 1, `dp ${args.join(' ')} as an editor: ${r.stdout}`);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^error: .*needs the 'manage_users' permission; role 'editor' does not have it/m);
    });
    assert.equal(admin.code, 0, admin.stderr);
    assertSameUsersOutcomes(offline, results, 'logged in as an admin', withoutLastLogin);
    // Nothing the editor tried took effect.
    assert.deepEqual((JSON.parse(list.stdout) as Array<{ username: string; role: string }>).map((u) => `${u.username}:${u.role}`), ['ed:editor', 'root:admin']);
  });
});
