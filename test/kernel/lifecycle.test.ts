/**
 * Plugin lifecycle: phases in order and in pairs (server and the real CLI alike), per-plugin
 * deadlines that name the plugin, the run signal, and `dp serve`'s graceful shutdown on SIGTERM.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { App } from '../../kernel/app.js';
import { makeProject, runCli, spawnServe, waitUntil } from '../helpers.js';

/** A project plugin that writes each lifecycle call to lifecycle.log; `hang` makes one phase never finish. */
function recorderPlugin(name: string, options: { hang?: 'start' | 'stop' | 'beforeStop'; slowRoute?: boolean } = {}): Record<string, string> {
  const routes = options.slowRoute ? [{ method: 'GET', url: `/api/${name}/slow`, permission: 'read' }] : [];
  return {
    [`plugins/${name}/plugin.json`]: JSON.stringify({
      name,
      version: '1.0.0',
      entry: './index.mjs',
      contributes: {
        routes,
        commands: [
          { command: `${name}-db`, describe: 'touches the database' },
          { command: `${name}-nodb`, describe: 'never touches the database' },
        ],
      },
    }),
    [`plugins/${name}/index.mjs`]: `
import fs from 'node:fs';
import path from 'node:path';
export default {
  setup(ctx) {
    const log = (line) => fs.appendFileSync(path.join(ctx.project.root, 'lifecycle.log'), '${name} ' + line + '\\n');
    const hang = ${JSON.stringify(options.hang ?? null)};
    const phase = (p) => async () => { log(p); if (hang === p) await new Promise(() => {}); };
    ctx.onStart(async () => { await phase('start')(); ctx.signal.addEventListener('abort', () => log('signal-aborted')); });
    ctx.onBeforeStop(phase('beforeStop'));
    ctx.onStop(phase('stop'));
    ctx.command('${name}-db', async (_a, io) => { io.out(String(await ctx.db.value('SELECT 42'))); return 0; });
    ctx.command('${name}-nodb', (_a, io) => { io.out('no database'); return 0; });
    ${
      options.slowRoute
        ? `ctx.route({ method: 'GET', url: '/api/${name}/slow', permission: 'read',
        handler: async (req) => { log('slow'); await new Promise((r) => setTimeout(r, Number(req.query.ms))); return { slept: Number(req.query.ms) }; } });`
        : ''
    }
  },
};`,
  };
}

function project(plugins: Record<string, string>): string {
  return makeProject({ 'project.yml': 'name: p\ndatabase:\n  path: p.duckdb\nplugins:\n  paths: [plugins]\n', ...plugins });
}

const logOf = (root: string) => (fs.existsSync(path.join(root, 'lifecycle.log')) ? fs.readFileSync(path.join(root, 'lifecycle.log'), 'utf8').trim().split('\n') : []);

describe('plugin lifecycle', () => {
  it('runs start, then beforeStop before stop in reverse plugin order, and aborts the run signal on stop', async () => {
    const root = project({ ...recorderPlugin('alpha'), ...recorderPlugin('beta') });
    const app = await App.boot({ projectRoot: root, serving: true });
    await app.start();
    const started = logOf(root);
    assert.deepEqual(started.slice(0, 2), ['alpha start', 'beta start']);
    await app.close();
    assert.deepEqual(logOf(root).slice(2), ['alpha signal-aborted', 'beta signal-aborted', 'beta beforeStop', 'alpha beforeStop', 'beta stop', 'alpha stop']);
  });

  it('the CLI runs the same pairs: start and stop when a command touches the database, neither when it does not', () => {
    const root = project(recorderPlugin('alpha'));
    const nodb = runCli(['alpha-nodb', '--project', root]);
    assert.equal(nodb.code, 0, nodb.stderr);
    assert.deepEqual(logOf(root), [], 'no start, so no stop either');
    assert.ok(!fs.existsSync(path.join(root, 'p.duckdb')), 'the database file was never opened');
    const db = runCli(['alpha-db', '--project', root]);
    assert.equal(db.code, 0, db.stderr);
    assert.equal(db.stdout.trim(), '42');
    assert.deepEqual(logOf(root), ['alpha start', 'alpha signal-aborted', 'alpha beforeStop', 'alpha stop']);
  });

  it('a start past its deadline fails the boot with an error naming the plugin', async () => {
    const root = project({ ...recorderPlugin('alpha'), ...recorderPlugin('sleepy', { hang: 'start' }) });
    const app = await App.boot({ projectRoot: root, serving: true, phaseTimeoutsMs: { start: 300 } });
    await assert.rejects(app.start(), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'plugin_start_timeout');
      assert.match(e.message, /Plugin 'sleepy': onStart did not finish within 0.3 s/);
      return true;
    });
    await app.close();
    // The plugin that did start is stopped; the boot failure did not leave the file locked.
    assert.ok(logOf(root).includes('alpha stop'));
    const again = await App.boot({ projectRoot: project(recorderPlugin('alpha')), serving: true });
    await again.start();
    await again.close();
  });

  it('a stop past its deadline is cut, and the other plugins still stop', async () => {
    const root = project({ ...recorderPlugin('alpha'), ...recorderPlugin('stuck', { hang: 'stop' }) });
    const app = await App.boot({ projectRoot: root, serving: true, phaseTimeoutsMs: { stop: 300 } });
    await app.start();
    const t0 = Date.now();
    await app.close();
    assert.ok(Date.now() - t0 < 5000, 'close returned although stuck never finished');
    assert.deepEqual(logOf(root).filter((l) => l.endsWith(' stop')), ['stuck stop', 'alpha stop']);
  });
});

/** Starts the real `dp serve` on a free port; resolves with its URL once it listens. */
async function serveProcess(root: string, grace: number) {
  const served = await spawnServe(root, { args: ['--shutdown-grace', String(grace)] });
  const exited = served.exited.then(({ code }) => ({ code, at: Date.now() }));
  return { child: served.child, url: served.url, exited };
}

describe('dp serve shutdown', () => {
  it('SIGTERM lets an in-flight request finish within the grace, then stops plugins and exits 0', async () => {
    const root = project(recorderPlugin('alpha', { slowRoute: true }));
    const { child, url, exited } = await serveProcess(root, 10);
    const inFlight = fetch(`${url}/api/alpha/slow?ms=1500`);
    await waitUntil(() => logOf(root).includes('alpha slow'), 'the slow request to be in flight');
    child.kill('SIGTERM');
    const res = await inFlight;
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { slept: 1500 });
    const { code } = await exited;
    assert.equal(code, 0);
    assert.deepEqual(logOf(root).slice(-2), ['alpha beforeStop', 'alpha stop']);
  });

  it('SIGTERM cuts requests still running at the deadline (a slow route and a running query) and the process exits', async () => {
    const root = project(recorderPlugin('alpha', { slowRoute: true }));
    const { child, url, exited } = await serveProcess(root, 1);
    const slow = fetch(`${url}/api/alpha/slow?ms=60000`).then(
      (r) => r.status,
      () => 'cut',
    );
    const query = fetch(`${url}/api/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: 'SELECT sum(i) FROM range(1000000000000) t(i)' }),
    }).then(
      (r) => r.status,
      () => 'cut',
    );
    await waitUntil(() => logOf(root).includes('alpha slow'), 'the slow request to be in flight');
    const t0 = Date.now();
    child.kill('SIGTERM');
    const { code, at } = await exited;
    assert.equal(code, 0);
    assert.ok(at - t0 < 8000, `exited ${at - t0} ms after SIGTERM`);
    assert.equal(await slow, 'cut');
    // The query was interrupted at the deadline: its answer is an error or the connection was cut.
    assert.notEqual(await query, 200);
  });
});
