/**
 * The live config service (issue 30 item 1): an owner's edit keeps comments, is validated against
 * the owner's schema (a bad one leaves the file as it was), is refused for a key the caller does
 * not own; a running server applies an `alerts:` block, a new stream and a secret set from the
 * CLI without a restart (each test waits for the change event, never a sleep); a connector's
 * sync stream is defined through the streams service; a key that needs a restart says so.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it, mock } from 'node:test';
import type { App } from '../../kernel/app.js';
import { loadProject } from '../../kernel/config.js';
import { LiveConfig, type ConfigState } from '../../kernel/config/live.js';
import { KernelEventBus } from '../../kernel/events.js';
import { KernelLogger } from '../../kernel/log.js';
import { STREAMS_CONFIG } from '../../plugins/streams/config.js';
import { CONFIG_CHANGED, STREAMS_SERVICE, type ConfigChange, type DpError, type PluginConfig, type StreamInput, type StreamsService } from '../../sdk/index.js';
import { makeProject, runCli, startServer, type TestServer } from '../helpers.js';
import { startReceiver } from '../plugins/quality/util.js';

const PROJECT = `# the shop's project
name: live # shown in the UI
database:
  path: w.duckdb

# nightly jobs
streams:
  nightly: # keep this one
    steps:
      - transform: [all]
`;

/** The config service a plugin sees, by its name (what its ctx.config is). */
const configOf = (app: App, plugin: string): PluginConfig => app.liveConfig.forPlugin(app.plugins.find((p) => p.manifest.name === plugin)!.manifest);

/** Resolves with the next change announced on the event bus that `accept` takes. */
function nextChange(app: App, accept: (change: ConfigChange) => boolean): Promise<ConfigChange> {
  return new Promise((resolve) => {
    const off = app.events.on(CONFIG_CHANGED, (event) => {
      const change = event.payload as unknown as ConfigChange;
      if (!accept(change)) return;
      off();
      resolve(change);
    });
  });
}

describe('the live config service', () => {
  let s: TestServer;
  let root: string;
  let file: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const streamNames = async () => ((await s.request('GET', '/api/streams')).body.streams as Array<{ name: string }>).map((x) => x.name).sort();

  before(async () => {
    receiver = await startReceiver();
    root = makeProject({ 'project.yml': PROJECT, '.env': 'HOOK_TOKEN=first-token\n', 'data/shop/customers.csv': 'id,name\n1,Ada\n' });
    file = path.join(root, 'project.yml');
    s = await startServer(root);
  });
  after(async () => {
    await s?.close();
    await receiver?.close();
  });

  it("an owner's edit keeps comments and order, is written and announced", async () => {
    const heard: ConfigChange[] = [];
    const off = configOf(s.app, 'streams').subscribe(STREAMS_CONFIG, (c) => heard.push(c));
    const change = configOf(s.app, 'streams').edit(STREAMS_CONFIG, (streams) => streams.set(['hourly'], { schedule: '0 * * * *', steps: [{ seed: ['all'] }] }));
    off();
    assert.deepEqual(change.keys, ['streams']);
    assert.equal(change.source, 'edit');
    assert.deepEqual(heard.map((c) => c.keys), [['streams']]);
    const text = fs.readFileSync(file, 'utf8');
    for (const comment of ["# the shop's project", '# shown in the UI', '# nightly jobs', '# keep this one']) assert.ok(text.includes(comment), `${comment} survives:\n${text}`);
    assert.ok(text.indexOf('nightly') < text.indexOf('hourly'));
    assert.deepEqual(await streamNames(), ['hourly', 'nightly']);
  });

  it('refuses an edit of a key the caller does not own, and leaves the file alone', () => {
    const before = fs.readFileSync(file, 'utf8');
    assert.throws(
      () => configOf(s.app, 'connectors').edit(STREAMS_CONFIG, (streams) => streams.delete(['nightly'])),
      (e: DpError) => e.status === 403 && e.code === 'config_key_not_owned' && e.details.key === 'streams',
    );
    assert.equal(fs.readFileSync(file, 'utf8'), before);
  });

  it("refuses an edit the owner's schema does not accept: the file and the values in force stay", async () => {
    const before = fs.readFileSync(file, 'utf8');
    const inForce = JSON.stringify(s.app.configOf('streams'));
    assert.throws(
      () => configOf(s.app, 'streams').edit(STREAMS_CONFIG, (streams) => streams.set(['broken'], { steps: [{ load: ['all'] }] })),
      (e: DpError) => e.status === 400 && e.code === 'config_edit_invalid' && /streams\.broken/.test(e.message) && !e.message.includes(root),
    );
    assert.equal(fs.readFileSync(file, 'utf8'), before);
    assert.equal(JSON.stringify(s.app.configOf('streams')), inForce);
    assert.ok(!(await streamNames()).includes('broken'));
  });

  it('a running server applies an alerts: block added to the file by hand, without a restart', async () => {
    const applied = nextChange(s.app, (c) => c.keys.includes('alerts'));
    fs.appendFileSync(file, `alerts:\n  channels: [webhook]\n  webhook_url: ${receiver.url}/hook/\${HOOK_TOKEN}\n`);
    const change = await applied;
    assert.equal(change.source, 'file');
    assert.deepEqual(change.restartRequired, []);
    const sent = await s.request('POST', '/api/alerts/test', { channel: 'webhook' });
    assert.equal(sent.status, 200, sent.text);
    assert.equal(sent.body.status, 'sent', sent.text);
    assert.ok(receiver.received.some((r) => r.path === '/hook/first-token'), JSON.stringify(receiver.received.map((r) => r.path)));
  });

  it('a running server lists and runs a stream added to the file by hand', async () => {
    const applied = nextChange(s.app, (c) => c.keys.includes('streams'));
    const doc = fs.readFileSync(file, 'utf8').replace('streams:\n', 'streams:\n  added_by_hand:\n    steps:\n      - seed: [all]\n');
    fs.writeFileSync(file, doc);
    await applied;
    assert.ok((await streamNames()).includes('added_by_hand'));
    const run = await s.request('POST', '/api/stream/added_by_hand');
    assert.equal(run.status, 200, run.text);
    assert.equal(run.body.status, 'success', run.text);
  });

  it('a secret set from the CLI reaches the running server: the values that reference it change', async () => {
    const applied = nextChange(s.app, (c) => c.env && c.keys.includes('alerts'));
    const set = runCli(['secrets', 'set', 'HOOK_TOKEN', 'second-token', '--project', root]);
    assert.equal(set.code, 0, set.stderr);
    const change = await applied;
    assert.equal(change.source, 'file');
    const sent = await s.request('POST', '/api/alerts/test', { channel: 'webhook' });
    assert.equal(sent.body.status, 'sent', sent.text);
    assert.ok(receiver.received.some((r) => r.path === '/hook/second-token'));
    assert.ok(!fs.readFileSync(file, 'utf8').includes('second-token'), 'the secret stays in .env');
  });

  it('a key the server applies only at its next start is announced as such', async () => {
    const applied = nextChange(s.app, (c) => c.keys.includes('server'));
    fs.appendFileSync(file, 'server:\n  max_streams_per_user: 7\n');
    const change = await applied;
    assert.deepEqual(change.restartRequired, ['server']);
  });

  it('a connector defines its sync stream through the streams service, and its connection through the kernel', async () => {
    const streams = s.app.services.get<StreamsService>(STREAMS_SERVICE);
    const defined: string[] = [];
    const removed: string[] = [];
    const define = streams.define.bind(streams);
    const remove = streams.remove.bind(streams);
    streams.define = (name: string, stream: StreamInput) => {
      defined.push(name);
      define(name, stream);
    };
    streams.remove = (name: string) => {
      removed.push(name);
      return remove(name);
    };
    try {
      const setup = await s.request('POST', '/api/connectors/setup', { connector_type: 'csv', connection_name: 'shop', config: { path: 'data/shop' } });
      assert.equal(setup.status, 200, setup.text);
      assert.deepEqual(defined, ['sync_shop']);
      assert.ok((await streamNames()).includes('sync_shop'));
      const written = s.app.project.written as Record<string, Record<string, unknown>>;
      assert.deepEqual(written.connections!.shop, { type: 'csv', path: 'data/shop' });
      assert.ok(fs.readFileSync(file, 'utf8').includes("# the shop's project"), 'comments survive a setup');
      const gone = await s.request('DELETE', '/api/connectors/shop');
      assert.equal(gone.status, 200, gone.text);
      assert.deepEqual(removed, ['sync_shop']);
      assert.ok(!(await streamNames()).includes('sync_shop'));
      assert.equal((s.app.project.written as Record<string, unknown>).connections, undefined);
    } finally {
      streams.define = define;
      streams.remove = remove;
    }
  });
});

describe('reads of the live config', () => {
  /** A service on a project of its own (no server, no watcher: what it sees of an edit comes from its reads alone). */
  const serviceOn = (root: string, follow: boolean) => {
    let state: ConfigState = { project: loadProject(root, null), values: new Map() };
    const live = new LiveConfig({
      current: () => state,
      install: (next) => (state = next),
      validate: () => new Map(),
      ownerOf: () => undefined,
      restartReasonOf: () => undefined,
      events: new KernelEventBus(),
      log: new KernelLogger('config', () => [], { human: true }),
      follow,
    });
    const config = live.forPlugin({ name: 'reader', version: '1.0.0', entry: './index.js' });
    return { name: () => (config.asWritten() as { name: string }).name };
  };
  /** Stats of project.yml and .env (loading a project stats its folder too: not counted). */
  const statsOfFiles = (stat: { mock: { calls: Array<{ arguments: unknown[] }> } }) =>
    stat.mock.calls.filter((c) => ['project.yml', '.env'].includes(path.basename(String(c.arguments[0])))).length;
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('a serving process stats project.yml and .env once per tick, and the first read after an edit on disk sees it', async () => {
    const root = makeProject({ 'project.yml': 'name: first\ndatabase:\n  path: r.duckdb\n', '.env': 'A=1\n' });
    const service = serviceOn(root, true);
    const stat = mock.method(fs, 'statSync');
    try {
      const names = Array.from({ length: 10 }, () => service.name());
      assert.deepEqual(new Set(names), new Set(['first']));
      assert.equal(statsOfFiles(stat), 2, 'ten reads in one tick: one stat of each file');
      fs.writeFileSync(path.join(root, 'project.yml'), 'name: second\ndatabase:\n  path: r.duckdb\n');
      await nextTurn();
      assert.equal(service.name(), 'second', 'the next tick compares the files again');
      assert.equal(statsOfFiles(stat), 6, 'the comparison (2) and the reload (2)');
    } finally {
      stat.mock.restore();
    }
  });

  it('a one-shot command reads the files once, at load, and never stats them', () => {
    const root = makeProject({ 'project.yml': 'name: once\ndatabase:\n  path: r.duckdb\n' });
    const stat = mock.method(fs, 'statSync');
    try {
      const service = serviceOn(root, false);
      for (let i = 0; i < 10; i++) assert.equal(service.name(), 'once');
      assert.equal(statsOfFiles(stat), 0);
    } finally {
      stat.mock.restore();
    }
  });
});
