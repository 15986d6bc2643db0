import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PIPELINE_END } from '../../../sdk/index.js';
import { makeProject, startServer, type TestServer } from '../../helpers.js';
import { deadPort, fireBuild, fireTransformEnd, quality, startReceiver } from './util.js';

function project(alerts: string): string {
  return makeProject({ 'project.yml': `name: alerting\ndatabase:\n  path: test.duckdb\nalerts:\n${alerts}` });
}

describe('quality: alerts', () => {
  describe('to a live receiver', () => {
    let s: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    before(async () => {
      receiver = await startReceiver();
      s = await startServer(
        project(`  channels: [webhook, chat, log]\n  webhook_url: ${receiver.url}/hook\n  chat_webhook_url: ${receiver.url}/chat/SECRET-TOKEN\n  on_failure: true\n  on_success: false\n`),
      );
      await s.app.db.run('CREATE SCHEMA m; CREATE TABLE m.t AS SELECT * FROM range(3) r(id)');
    });
    after(async () => {
      await s.close();
      await receiver.close();
    });

    it('sends a pipeline failure to the webhook and chat channels and records each delivery', async () => {
      await fireTransformEnd(s.app, 'run-f1', [{ model: 'm.t', status: 'error', error: 'Binder Error: column x not found' }]);
      await quality(s.app).drainAlerts();
      const hook = receiver.received.find((r) => r.path === '/hook');
      assert.ok(hook, 'the webhook received the alert');
      assert.equal(hook.headers['content-type'], 'application/json');
      assert.equal(hook.body.source, 'dp');
      assert.equal(hook.body.alert_type, 'pipeline_failure');
      assert.equal(hook.body.project, 'alerting');
      assert.equal(hook.body.title, 'Transform run-f1 failed');
      assert.match(hook.body.message, /m\.t: Binder Error: column x not found/);
      assert.equal(hook.body.details.run_id, 'run-f1');
      const chat = receiver.received.find((r) => r.path === '/chat/SECRET-TOKEN');
      assert.ok(chat);
      assert.deepEqual(Object.keys(chat.body), ['text']);
      assert.match(chat.body.text, /Transform run-f1 failed/);

      const history = await s.request('GET', '/api/alerts');
      const byChannel = Object.fromEntries(history.body.alerts.filter((a: { alert_type: string }) => a.alert_type === 'pipeline_failure').map((a: { channel: string }) => [a.channel, a]));
      assert.equal(byChannel.webhook.status, 'sent');
      assert.equal(byChannel.webhook.http_status, 200);
      assert.equal(byChannel.webhook.attempts, 1);
      assert.equal(byChannel.chat.status, 'sent');
      assert.equal(byChannel.chat.target, receiver.url, 'the secret path of a chat webhook is not stored');
      assert.equal(byChannel.log.status, 'logged');
    });

    it('stays quiet on success when on_success is false', async () => {
      const before = receiver.received.length;
      await fireTransformEnd(s.app, 'run-ok', [{ model: 'm.t', status: 'built' }]);
      await quality(s.app).drainAlerts();
      assert.equal(receiver.received.length, before);
    });

    it('sends one assertion-failure alert per run naming the model and assertion', async () => {
      const b = await fireBuild(s.app, 'm.t', 'run-a', ['row_count > 10', 'row_count > 0']);
      assert.equal(b.status, 'assertion_failed');
      await fireTransformEnd(s.app, 'run-a', [{ model: 'm.t', status: 'assertion_failed' }]);
      await quality(s.app).drainAlerts();
      const hooks = receiver.received.filter((r) => r.path === '/hook' && r.body.alert_type === 'assertion_failure');
      assert.equal(hooks.length, 1);
      assert.match(hooks[0].body.message, /m\.t: row_count > 10 — row count 3, expected > 10/);
      assert.equal(hooks[0].body.details.models[0].assertions.length, 1);
    });

    it('sends a stream failure from pipelineEnd', async () => {
      await s.app.hookPoint(PIPELINE_END)!.promise({ runId: 'p1', streamName: 'daily', trigger: 'schedule', status: 'error', startedAt: new Date(), error: 'ingest step failed' });
      await quality(s.app).drainAlerts();
      const hook = receiver.received.find((r) => r.path === '/hook' && r.body.title === 'Stream daily failed');
      assert.ok(hook);
      assert.equal(hook.body.message, 'ingest step failed');
    });

    it('POST /api/alerts/test sends to the given chat URL and returns the delivery', async () => {
      const r = await s.request('POST', '/api/alerts/test', { channel: 'chat', chat_webhook_url: `${receiver.url}/other-chat` });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.status, 'sent');
      assert.equal(r.body.alert_type, 'test');
      const got = receiver.received.find((x) => x.path === '/other-chat');
      assert.ok(got);
      assert.match(got.body.text, /Test alert/);
      const bad = await s.request('POST', '/api/alerts/test', { channel: 'chat', chat_webhook_url: 'ftp://nope' });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'invalid_url');
      const unknown = await s.request('POST', '/api/alerts/test', { channel: 'pager' });
      assert.equal(unknown.status, 400);
      const limited = await s.request('GET', '/api/alerts?limit=1');
      assert.equal(limited.body.alerts.length, 1);
      assert.equal(limited.body.alerts[0].alert_type, 'test');
    });
  });

  it('a receiver that is down: the run still finishes and the failure is recorded after one retry', async () => {
    const port = await deadPort();
    const s = await startServer(project(`  channels: [webhook]\n  webhook_url: http://127.0.0.1:${port}/hook\n`));
    try {
      const run = await fireTransformEnd(s.app, 'run-down', [{ model: 'm.x', status: 'error', error: 'boom' }]);
      assert.equal(run.status, 'error', 'the hook returned; delivery happens in the background');
      await quality(s.app).drainAlerts();
      const history = await s.request('GET', '/api/alerts');
      assert.equal(history.body.alerts.length, 1);
      const a = history.body.alerts[0];
      assert.equal(a.status, 'failed');
      assert.equal(a.attempts, 2);
      assert.match(a.error, /ECONNREFUSED/);
      assert.equal(a.payload.alert_type, 'pipeline_failure');
    } finally {
      await s.close();
    }
  });

  it('retries once after a 5xx answer, and gives up on a receiver that never answers', async () => {
    const flaky = await startReceiver((_r, n) => (n === 1 ? 503 : 200));
    const silent = await startReceiver(() => 'hang');
    const s = await startServer(project(`  channels: [webhook, chat]\n  webhook_url: ${flaky.url}/hook\n  chat_webhook_url: ${silent.url}/chat\n  timeout_seconds: 0.3\n`));
    try {
      await fireTransformEnd(s.app, 'run-flaky', [{ model: 'm.x', status: 'error', error: 'boom' }]);
      await quality(s.app).drainAlerts();
      assert.equal(flaky.received.length, 2);
      assert.deepEqual(flaky.received[0].body, flaky.received[1].body);
      assert.equal(silent.received.length, 2, 'the silent receiver got the original and the retry');
      const alerts = (await s.request('GET', '/api/alerts')).body.alerts;
      const webhook = alerts.find((a: { channel: string }) => a.channel === 'webhook');
      assert.deepEqual([webhook.status, webhook.attempts, webhook.http_status], ['sent', 2, 200]);
      const chat = alerts.find((a: { channel: string }) => a.channel === 'chat');
      assert.equal(chat.status, 'failed');
      assert.match(chat.error, /timeout/i);
    } finally {
      await s.close();
      await flaky.close();
      await silent.close();
    }
  });

  it('a channel without a URL is recorded as failed, and on_failure: false silences failures', async () => {
    const s = await startServer(project('  channels: [chat]\n'));
    try {
      await fireTransformEnd(s.app, 'r1', [{ model: 'm.x', status: 'error' }]);
      await quality(s.app).drainAlerts();
      const [a] = (await s.request('GET', '/api/alerts')).body.alerts;
      assert.equal(a.status, 'failed');
      assert.equal(a.error, 'alerts.chat_webhook_url is not set');
    } finally {
      await s.close();
    }
    const quiet = await startServer(project('  channels: [log]\n  on_failure: false\n  on_success: true\n'));
    try {
      await fireTransformEnd(quiet.app, 'r2', [{ model: 'm.x', status: 'error' }]);
      await fireTransformEnd(quiet.app, 'r3', [{ model: 'm.x', status: 'built' }]);
      await quality(quiet.app).drainAlerts();
      const alerts = (await quiet.request('GET', '/api/alerts')).body.alerts;
      assert.deepEqual(
        alerts.map((a: { alert_type: string }) => a.alert_type),
        ['pipeline_success'],
      );
    } finally {
      await quiet.close();
    }
  });
});
