/**
 * The kernel's scheduler (`ctx.scheduler`), on a clock the test owns: a task never overlaps
 * itself, a run past its timeout is aborted, schedules arm only once every plugin has started
 * and only when the process may work on the wall clock, and shutdown aborts a running task
 * before any plugin's onBeforeStop.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { App } from '../../kernel/app.js';
import { Scheduler } from '../../kernel/scheduler.js';
import { SCHEDULED_DEMO, type ScheduledDemo } from '../fixtures/plugins/scheduled-demo/index.js';
import { FIXTURE_PLUGINS, makeProject } from '../helpers.js';
import { FakeClock, quietLog } from './fake-clock.js';

const T0 = Date.parse('2026-03-02T10:00:30.000Z');

/** A project with the fixture and no other plugin that schedules (connectors would add its minute task). */
function demoProject(): string {
  return makeProject({
    'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(path.join(FIXTURE_PLUGINS, 'scheduled-demo'))}]\n  disable: [connectors-cloud, connectors]\n`,
  });
}

describe('kernel scheduler', () => {
  it('never runs a task twice at once: a tick while it runs is skipped', async () => {
    const clock = new FakeClock(T0);
    const scheduler = new Scheduler(quietLog, clock);
    let starts = 0;
    let release!: () => void;
    scheduler.add({ id: 'slow', cron: '* * * * *', run: () => new Promise<void>((r) => (starts++, (release = r))) });
    scheduler.start();
    await clock.advance(3 * 60_000);
    assert.equal(starts, 1);
    assert.equal(scheduler.list()[0].skipped, 2);
    release();
    await scheduler.settled();
    await clock.advance(60_000);
    assert.equal(starts, 2);
    scheduler.stop();
  });

  it('aborts a run at its timeout and records why', async () => {
    const clock = new FakeClock(T0);
    const scheduler = new Scheduler(quietLog, clock);
    const signals: AbortSignal[] = [];
    scheduler.add({
      id: 'bounded',
      cron: '* * * * *',
      timeoutMs: 20_000,
      run: (signal) => new Promise<void>((resolve) => (signals.push(signal), signal.addEventListener('abort', () => resolve(), { once: true }))),
    });
    scheduler.start();
    await clock.advance(30_000); // 10:01:00 fires
    assert.equal(signals.length, 1);
    await clock.advance(19_000);
    assert.equal(signals[0].aborted, false);
    await clock.advance(1_000);
    assert.equal(signals[0].aborted, true);
    await scheduler.settled();
    const status = scheduler.list()[0];
    assert.equal(status.last_status, 'error');
    assert.match(status.last_error!, /timed out after 20 s/);
    assert.equal(status.running, false);
    scheduler.stop();
  });

  it('arms nothing until every plugin started, and aborts a running task before any onBeforeStop', async () => {
    const clock = new FakeClock(T0);
    const app = await App.boot({ projectRoot: demoProject(), serving: true, scheduler: true, clock });
    const demo = app.services.get<ScheduledDemo>(SCHEDULED_DEMO);
    const starting = app.start();
    // The plugin's onStart has not finished: no timer is armed, however far the clock moves.
    await new Promise((r) => setImmediate(r));
    await clock.advance(5 * 60_000);
    assert.equal(clock.pending, 0);
    assert.equal(demo.runs.length, 0);
    assert.equal(app.scheduler.running, false);
    demo.releaseStart();
    await starting;
    assert.equal(app.scheduler.running, true);
    assert.equal(clock.pending, 1);
    await clock.advance(60_000);
    assert.equal(demo.runs.length, 1);
    assert.equal(demo.runs[0].aborted, false);
    await app.close();
    assert.equal(demo.abortedBeforeStop, true, 'the task was aborted before the plugin was asked to stop');
    assert.equal(app.scheduler.running, false);
    assert.equal(clock.pending, 0);
  });

  it('lists but never arms schedules without the wall clock (test servers, --no-scheduler)', async () => {
    const clock = new FakeClock(T0);
    const app = await App.boot({ projectRoot: demoProject(), serving: true, clock });
    app.services.get<ScheduledDemo>(SCHEDULED_DEMO).releaseStart();
    await app.start();
    assert.equal(app.scheduler.running, false);
    assert.deepEqual(app.scheduler.list().map((s) => [s.name, s.next_run]), [['demo:minute', null]]);
    await clock.advance(10 * 60_000);
    assert.equal(clock.pending, 0);
    assert.equal(app.services.get<ScheduledDemo>(SCHEDULED_DEMO).runs.length, 0);
    await app.close();
  });

  it('reads an expression when it starts or lists, not when a task is added (a process that never starts it never loads cron-parser)', async () => {
    const clock = new FakeClock(T0);
    const errors: string[] = [];
    const scheduler = new Scheduler({ ...quietLog, error: (m: string) => void errors.push(m) }, clock);
    scheduler.add({ id: 'job:bad', cron: '0 25 * * *', run: async () => assert.fail('never runs') });
    assert.deepEqual(errors, [], 'nothing read yet');
    const [listed] = scheduler.list();
    assert.match(listed.error!, /'0 25 \* \* \*' is not a valid cron expression/);
    assert.equal(errors.length, 1, 'read once, when listed');
    scheduler.list();
    scheduler.start();
    assert.equal(errors.length, 1, 'and never read again');
    // Added once it runs: read at once, armed when valid.
    scheduler.add({ id: 'job:late', cron: '* * * * *', run: async () => {} });
    assert.notEqual(scheduler.list().find((t) => t.name === 'job:late')!.next_run, null);
    scheduler.stop();
  });
});
