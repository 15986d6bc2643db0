/**
 * Streams end to end on a real server and DuckDB file: a three-step stream with its event
 * sequence read by a real SSE client, the completion webhook received by a local server,
 * retries, cancel between steps and during a long script, already_running, the legacy
 * single-shot run, history, and the bad-input answers (unknown stream, bad targets, bad actions).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it, mock } from 'node:test';
import { App } from '../../../kernel/app.js';
import { startTestServer, type PluginTestServer, type TestCaller } from '../../../sdk/testing.js';
import { makeProject } from '../../helpers.js';

interface SseMessage {
  id?: string;
  event?: string;
  data?: any;
  comment?: string;
}

/** A real EventSource-style reader over fetch: collects events (and comments) as they arrive. */
function listen(url: string): { messages: SseMessage[]; until(pred: (m: SseMessage[]) => boolean, ms?: number): Promise<SseMessage[]>; close(): void; status: Promise<number> } {
  const controller = new AbortController();
  const messages: SseMessage[] = [];
  let wake = () => {};
  const status = fetch(url, { signal: controller.signal, headers: { accept: 'text/event-stream' } }).then(async (res) => {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut: number;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const m: SseMessage = {};
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) m.comment = line.slice(1).trim();
              else if (line.startsWith('id: ')) m.id = line.slice(4);
              else if (line.startsWith('event: ')) m.event = line.slice(7);
              else if (line.startsWith('data: ')) m.data = JSON.parse(line.slice(6));
            }
            messages.push(m);
            wake();
          }
        }
      } catch {
        /* closed */
      }
    })();
    return res.status;
  });
  return {
    messages,
    status,
    close: () => controller.abort(),
    until: (pred, ms = 30_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out; got ${JSON.stringify(messages.map((m) => m.event ?? m.comment))}`)), ms);
        const check = () => {
          if (pred(messages)) {
            clearTimeout(timer);
            resolve(messages);
          }
        };
        wake = check;
        check();
      }),
  };
}

const events = (ms: SseMessage[]) => ms.filter((m) => m.event);
const ended = (ms: SseMessage[]) => ms.some((m) => m.event === 'complete' || m.event === 'error');

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > until) throw new Error(`timed out waiting; last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('streams', () => {
  let s: PluginTestServer;
  let editor: TestCaller;
  let viewer: TestCaller;
  let hook: http.Server;
  const received: Array<Record<string, any>> = [];

  before(async () => {
    hook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ path: req.url, contentType: req.headers['content-type'], body: JSON.parse(body) });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/done`;
    s = await startTestServer({
      plugins: [],
      builtIn: ['models', 'scripts', 'streams'],
      auth: true,
      sseHeartbeatMs: 300,
      files: {
        'ingest/load.ts': "export default async (ctx: any) => { await ctx.db.run('CREATE SCHEMA IF NOT EXISTS landing; CREATE OR REPLACE TABLE landing.events AS SELECT range AS id FROM range(5)'); console.log('loaded'); };\n",
        'seeds/prices.csv': 'id,price\n1,2.5\n2,4\n',
        'transform/staging/stg_events.sql': '-- @config materialized=view, schema=staging\nSELECT id FROM landing.events\n',
        'transform/marts/totals.sql': '-- @config materialized=table, schema=marts\nSELECT count(*) AS n, (SELECT sum(price) FROM seeds.prices) AS revenue FROM staging.stg_events\n',
        // Fails on its first attempt of each run, then succeeds (the attempt count lives in a table).
        'ingest/flaky.ts': `export default async (ctx: any) => {
  await ctx.db.run('CREATE TABLE IF NOT EXISTS flaky_attempts (n INTEGER); INSERT INTO flaky_attempts VALUES (1)');
  const n = Number(await ctx.db.value('SELECT count(*) FROM flaky_attempts'));
  if (n % 2 === 1) throw new Error('flaky failure on attempt ' + n);
  console.log('worked on attempt', n);
};\n`,
        'ingest/always_fails.ts': "export default async () => { throw new Error('down for good'); };\n",
        // Takes 600 ms and ignores its signal: a cancel meanwhile lands at the step boundary after it.
        'ingest/short_wait.ts': "export default async () => { await new Promise((r) => setTimeout(r, 600)); console.log('waited'); };\n",
        // Runs until cancelled, writing as it goes and honouring ctx.signal.
        'ingest/endless.ts': `export default async (ctx: any) => {
  await ctx.db.run('CREATE OR REPLACE TABLE endless_ticks (i INTEGER)');
  for (let i = 0; !ctx.signal.aborted; i++) {
    await ctx.db.run('INSERT INTO endless_ticks VALUES (' + i + ')');
    await new Promise((r) => setTimeout(r, 25));
  }
};\n`,
        'ingest/after.ts': "export default async (ctx: any) => { await ctx.db.run('CREATE TABLE after_ran AS SELECT 1 AS x'); };\n",
        '.env': 'HOOK_TOKEN=tok-8f3a9c1d\n',
      },
      projectYml: [
        'streams:',
        '  etl:',
        '    description: Load, seed, build',
        `    webhook_url: ${hookUrl}`,
        '    steps:',
        '      - ingest: [load]',
        '      - seed: [all]',
        '      - transform: [all]',
        '  flaky:',
        '    retries: 1',
        '    retry_delay: 0.05',
        '    steps:',
        '      - ingest: [flaky]',
        '  hopeless:',
        '    retries: 2',
        '    retry_delay: 0',
        `    webhook_url: ${hookUrl}`,
        '    steps:',
        '      - ingest: [always_fails]',
        '      - ingest: [after]',
        '  two_steps:',
        '    steps:',
        '      - ingest: [short_wait]',
        '      - ingest: [after]',
        '  endless:',
        '    steps:',
        '      - ingest: [endless.ts]',
        '      - ingest: [ingest/after.ts]',
        '  secret_hook:',
        '    webhook_url: http://127.0.0.1:9/hook?token=${HOOK_TOKEN}',
        '    steps:',
        '      - ingest: [load]',
        '  bad_target:',
        '    steps:',
        '      - ingest: [nope]',
        '      - transform: [+no_such_model]',
      ].join('\n'),
    });
    editor = await s.caller('editor');
    viewer = await s.caller('viewer');
  });
  after(async () => {
    await s?.close();
    await new Promise((r) => hook.close(r));
  });

  it('runs a three-step stream in the background, pushing its events to SSE listeners, and notifies the webhook', async () => {
    const first = listen(`${s.url}/api/stream/events?access_token=${viewer.token}`);
    const second = listen(`${s.url}/api/stream/events?access_token=${viewer.token}`);
    assert.equal(await first.status, 200);
    assert.equal(await second.status, 200);
    const started = await editor.request('POST', '/api/stream/etl/start');
    assert.equal(started.status, 200, started.text);
    assert.equal(started.body.status, 'started');
    assert.equal(started.body.stream_name, 'etl');

    const got = events(await first.until(ended));
    const kinds = got.map((m) => m.event);
    assert.deepEqual(kinds.slice(0, 5), ['start', 'step_start', 'step_end', 'step_start', 'step_end']);
    assert.equal(kinds.at(-1), 'complete');
    const transform = kinds.slice(5, -1);
    assert.equal(transform[0], 'step_start');
    assert.equal(transform.at(-1), 'step_end');
    const models = got.filter((m) => m.event === 'model_start' || m.event === 'model_end').map((m) => `${m.event}:${m.data.model}`);
    assert.deepEqual(models, ['model_start:staging.stg_events', 'model_end:staging.stg_events', 'model_start:marts.totals', 'model_end:marts.totals']);

    const start = got[0].data;
    assert.equal(start.stream, 'etl');
    assert.equal(start.trigger, 'api');
    assert.ok(got.every((m) => m.data.run_id === start.run_id && m.data.stream === 'etl'));
    assert.deepEqual(
      got.filter((m) => m.event === 'step_start').map((m) => [m.data.step, m.data.action]),
      [
        [0, 'ingest'],
        [1, 'seed'],
        [2, 'transform'],
      ],
    );
    const modelEnd = got.find((m) => m.event === 'model_end')!.data;
    assert.equal(modelEnd.status, 'built');
    assert.equal(typeof modelEnd.duration_ms, 'number');
    const complete = got.at(-1)!.data;
    assert.equal(complete.status, 'success');
    assert.equal(typeof complete.duration_ms, 'number');
    // Both listeners saw the same events, with increasing ids.
    await second.until(ended);
    assert.deepEqual(events(second.messages).map((m) => m.id), got.map((m) => m.id));
    assert.ok(got.every((m, i) => i === 0 || Number(m.id) > Number(got[i - 1].id)));
    // Idle now: keepalive comments keep the connection open.
    await first.until((ms) => ms.slice(ms.indexOf(got.at(-1)!)).some((m) => m.comment === 'keepalive'), 5_000);
    assert.equal((await viewer.request('GET', '/api/stream/active')).body.listeners, 2);
    first.close();
    second.close();
    // A listener that disconnects is dropped: nothing stays subscribed.
    await waitFor(() => viewer.request('GET', '/api/stream/active'), (r) => r.body.listeners === 0);

    assert.deepEqual(await s.db.all('SELECT n::INT AS n, revenue FROM marts.totals'), [{ n: 5, revenue: 6.5 }]);
    const active = await viewer.request('GET', '/api/stream/active');
    assert.equal(active.status, 200);
    assert.deepEqual(
      { running: active.body.running, finished: active.body.finished, status: active.body.status, stream_name: active.body.stream_name, operation: active.body.operation },
      { running: false, finished: true, status: 'success', stream_name: 'etl', operation: 'stream' },
    );
    for (const key of ['operation_label', 'started_at', 'total_events', 'duration_seconds']) assert.ok(key in active.body, key);
    assert.equal(active.body.total_events, got.length);

    const delivered = await waitFor(async () => received.filter((r) => r.body.stream === 'etl'), (r) => r.length === 1);
    assert.equal(delivered[0].path, '/done');
    assert.equal(delivered[0].contentType, 'application/json');
    assert.equal(delivered[0].body.status, 'success');
    assert.equal(delivered[0].body.run_id, start.run_id);
    assert.equal(typeof delivered[0].body.duration_ms, 'number');
    assert.deepEqual(delivered[0].body.steps.map((x: { action: string; status: string }) => `${x.action}:${x.status}`), ['ingest:success', 'seed:success', 'transform:success']);

    const history = await viewer.request('GET', '/api/history?name=etl');
    assert.equal(history.body.runs[0].run_id, start.run_id);
    assert.equal(history.body.runs[0].kind, 'stream');
    assert.equal(history.body.runs[0].steps.length, 3);
    assert.deepEqual(history.body.runs[0].steps[2].items.map((i: { name: string }) => i.name), ['staging.stg_events', 'marts.totals']);
  });

  it('retries a failed step (retries: 1) and succeeds on the second attempt', async () => {
    const r = await editor.request('POST', '/api/stream/flaky');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'success', r.text);
    assert.equal(r.body.steps[0].attempts, 2);
    assert.equal(r.body.steps[0].status, 'success');
  });

  it('fails after its retries, skipping the later steps, and tells the webhook', async () => {
    const listener = listen(`${s.url}/api/stream/events?access_token=${viewer.token}`);
    await listener.status;
    const r = await editor.request('POST', '/api/stream/hopeless');
    assert.equal(r.body.status, 'error');
    assert.equal(r.body.steps.length, 1);
    assert.equal(r.body.steps[0].attempts, 3);
    assert.match(r.body.error, /step 1 \(ingest\) failed: ingest\/always_fails\.ts: down for good/);
    const got = events(await listener.until(ended));
    listener.close();
    assert.deepEqual(got.filter((m) => m.event === 'step_start').map((m) => m.data.attempt), [1, 2, 3]);
    assert.equal(got.at(-1)!.event, 'error');
    assert.match(got.at(-1)!.data.error, /down for good/);
    assert.equal(await s.db.value("SELECT count(*)::INT FROM information_schema.tables WHERE table_name = 'after_ran'"), 0);
    const delivered = await waitFor(async () => received.filter((x) => x.body.stream === 'hopeless'), (x) => x.length === 1);
    assert.equal(delivered[0].body.status, 'error');
    assert.match(delivered[0].body.error, /down for good/);
  });

  it('answers already_running while a stream runs, and cancel stops a long script through its signal', async () => {
    const started = await editor.request('POST', '/api/stream/endless/start');
    assert.equal(started.body.status, 'started');
    await waitFor(() => s.db.value<number>("SELECT count(*)::INT FROM information_schema.tables WHERE table_name = 'endless_ticks'"), (n) => n === 1);
    const again = await editor.request('POST', '/api/stream/etl/start');
    assert.deepEqual(again.body, { status: 'already_running', stream_name: 'endless' });
    const legacy = await editor.request('POST', '/api/stream/etl');
    assert.deepEqual(legacy.body, { status: 'already_running', stream_name: 'endless' });
    const active = await viewer.request('GET', '/api/stream/active');
    assert.equal(active.body.running, true);
    assert.equal(active.body.status, 'running');
    assert.equal(active.body.stream_name, 'endless');
    assert.equal(active.body.operation, 'ingest');
    assert.equal(active.body.finished, false);

    const cancelled = await editor.request('POST', '/api/stream/cancel');
    assert.deepEqual(cancelled.body, { cancelled: true, stream_name: 'endless' });
    const done = await waitFor(() => viewer.request('GET', '/api/stream/active'), (r) => r.body.running === false);
    assert.equal(done.body.status, 'cancelled');
    const ticks = await s.db.value<number>('SELECT count(*)::INT FROM endless_ticks');
    // Nothing announces that something did not happen: eight of the script's 25 ms rounds pass.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await s.db.value<number>('SELECT count(*)::INT FROM endless_ticks'), ticks, 'the script stopped');
    assert.equal(await s.db.value("SELECT count(*)::INT FROM information_schema.tables WHERE table_name = 'after_ran'"), 0, 'the next step never ran');
    const history = await viewer.request('GET', '/api/history?name=endless');
    assert.equal(history.body.runs[0].status, 'cancelled');
    assert.equal(history.body.runs[0].steps[0].status, 'cancelled');
    const idle = await editor.request('POST', '/api/stream/cancel');
    assert.deepEqual(idle.body, { cancelled: false, stream_name: null });
  });

  it('cancels between steps: the running step finishes, the next one never starts', async () => {
    const listener = listen(`${s.url}/api/stream/events?access_token=${viewer.token}`);
    await listener.status;
    assert.equal((await editor.request('POST', '/api/stream/two_steps/start')).body.status, 'started');
    await listener.until((ms) => ms.some((m) => m.event === 'step_start'));
    assert.equal((await editor.request('POST', '/api/stream/cancel')).body.cancelled, true);
    const got = events(await listener.until(ended));
    listener.close();
    assert.deepEqual(got.map((m) => m.event), ['start', 'step_start', 'step_end', 'error']);
    assert.equal(got.at(-1)!.data.status, 'cancelled');
    assert.equal(await s.db.value("SELECT count(*)::INT FROM information_schema.tables WHERE table_name = 'after_ran'"), 0);
  });

  it('clears a run older than 10 minutes when the snapshot is read, and cancels it', async () => {
    const started = await editor.request('POST', '/api/stream/endless/start');
    assert.equal(started.body.status, 'started');
    assert.equal((await viewer.request('GET', '/api/stream/active')).body.running, true);
    // Only Date moves (timers and the server run on): the run now looks 11 minutes old.
    mock.timers.enable({ apis: ['Date'], now: Date.now() + 11 * 60_000 });
    let active;
    try {
      active = await viewer.request('GET', '/api/stream/active');
    } finally {
      mock.timers.reset();
    }
    assert.equal(active.body.running, false);
    assert.equal(active.body.stream_name, 'endless');
    assert.equal(active.body.status, 'cancelled');
    assert.match(active.body.operation_label, /cleared as stale/);
    const history = await waitFor(() => viewer.request('GET', '/api/history?name=endless&limit=1'), (r) => r.body.runs[0]?.run_id === started.body.run_id && r.body.runs[0]?.status !== 'running');
    assert.equal(history.body.runs[0].status, 'cancelled');
    assert.match(history.body.runs[0].error, /stale/);
  });

  it('a forced start cancels the running stream and starts the new one after it', async () => {
    assert.equal((await editor.request('POST', '/api/stream/endless/start')).body.status, 'started');
    await waitFor(() => viewer.request('GET', '/api/stream/active'), (r) => r.body.running === true && r.body.operation === 'ingest');
    const forced = await editor.request('POST', '/api/stream/flaky/start?force=true');
    assert.equal(forced.body.status, 'started');
    const done = await waitFor(() => viewer.request('GET', '/api/history?kind=stream&limit=2'), (r) => r.body.runs[0]?.name === 'flaky' && r.body.runs[0]?.status !== 'running' && r.body.runs[1]?.status !== 'running');
    assert.equal(done.body.runs[1].name, 'endless');
    assert.equal(done.body.runs[1].status, 'cancelled');
  });

  it('answers 404 for an unknown stream, 400 for targets that do not exist (nothing runs), 403 for a viewer', async () => {
    const unknown = await editor.request('POST', '/api/stream/nope/start');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'stream_not_found');
    const bad = await editor.request('POST', '/api/stream/bad_target/start');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_stream_target');
    assert.match(bad.body.error.message, /streams\.bad_target\.steps\[0\] \(ingest\): no script 'nope' in ingest\//);
    assert.match(bad.body.error.message, /streams\.bad_target\.steps\[1\] \(transform\): no model 'no_such_model'/);
    assert.equal((await viewer.request('GET', '/api/stream/active')).body.stream_name, 'flaky', 'nothing ran');
    const denied = await viewer.request('POST', '/api/stream/etl/start');
    assert.equal(denied.status, 403);
    const anonymous = await fetch(`${s.url}/api/stream/events`);
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
    const history = await viewer.request('GET', '/api/history?limit=0');
    assert.equal(history.status, 400);
  });

  it('lists the streams with their steps; the validator reports bad targets with their lines', async () => {
    const r = await viewer.request('GET', '/api/streams');
    assert.equal(r.status, 200);
    const etl = r.body.streams.find((x: { name: string }) => x.name === 'etl');
    assert.deepEqual(etl.steps, [{ ingest: ['load'] }, { seed: ['all'] }, { transform: ['all'] }]);
    assert.equal(etl.retries, 0);
    assert.equal(etl.retry_delay, 5);
    assert.equal(etl.schedule, null);
    const hooked = r.body.streams.find((x: { name: string }) => x.name === 'secret_hook');
    assert.equal(hooked.webhook_url, 'http://127.0.0.1:9/hook?token=${HOOK_TOKEN}');
    assert.ok(!r.text.includes('tok-8f3a9c1d'), 'a .env value never shows');
    const problems = await s.app.services.get<{ validate(): Promise<Array<{ file: string; line?: number; message: string }>> }>('streams').validate();
    assert.deepEqual(
      problems.map((p) => p.message),
      ["streams.bad_target.steps[0] (ingest): no script 'nope' in ingest/ (looked for ingest/nope.ts, ingest/nope.js, ingest/nope.mjs, ingest/nope.dpnb)", "streams.bad_target.steps[1] (transform): no model 'no_such_model'"],
    );
    assert.ok(problems.every((p) => p.file === 'project.yml' && typeof p.line === 'number'));
  });
});

describe('streams configuration at load', () => {
  it('refuses an unknown step action with its line, and a missing steps list', async () => {
    const bad = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nstreams:\n  s:\n    steps:\n      - load: [x]\n' });
    await assert.rejects(App.boot({ projectRoot: bad }), (e: Error) => /project\.yml line 7/.test(e.message) && /load/.test(e.message));
    const noSteps = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nstreams:\n  s:\n    retries: 1\n' });
    await assert.rejects(App.boot({ projectRoot: noSteps }), (e: Error) => /steps/.test(e.message));
    const twoActions = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nstreams:\n  s:\n    steps:\n      - seed: [all]\n        transform: [all]\n' });
    await assert.rejects(App.boot({ projectRoot: twoActions }), /project\.yml line 7/);
  });

  it('fills in the defaults of SPEC.md', async () => {
    const root = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nstreams:\n  nightly:\n    steps:\n      - seed: [all]\n      - transform: [a, b]\n' });
    fs.mkdirSync(path.join(root, 'seeds'));
    const app = await App.boot({ projectRoot: root });
    try {
      const def = app.services.get<{ list(): unknown[] }>('streams').list();
      assert.deepEqual(def, [
        {
          name: 'nightly',
          description: '',
          schedule: null,
          retries: 0,
          retry_delay: 5,
          webhook_url: null,
          steps: [
            { action: 'seed', targets: ['all'] },
            { action: 'transform', targets: ['a', 'b'] },
          ],
        },
      ]);
    } finally {
      await app.close();
    }
  });
});
