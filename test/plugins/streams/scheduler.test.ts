/**
 * Streams on the kernel's scheduler: cron schedules fire on an injected clock (no real minute
 * waits), a job still running at its next tick is skipped, a bad expression is listed with its
 * error while the others run, a scheduled stream runs through the real streams service, and
 * `dp serve` lists the schedules of streams and of other plugins' tasks with their next runs.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Scheduler } from '../../../kernel/scheduler.js';
import { streamJob } from '../../../plugins/streams/scheduler.js';
import { cronProblem, type StreamsService } from '../../../sdk/index.js';
import { startTestServer, type PluginTestServer } from '../../../sdk/testing.js';
import { FIXTURE_PLUGINS } from '../../helpers.js';

import { FakeClock, quietLog } from '../../kernel/fake-clock.js';

const T0 = Date.parse('2026-03-02T10:00:30.000Z');

describe('scheduler (injected clock)', () => {
  it('validates 5-field cron expressions', () => {
    assert.equal(cronProblem('*/5 * * * *'), null);
    assert.equal(cronProblem('0 6 * * 1-5'), null);
    assert.match(cronProblem('* * * * * *')!, /not a 5-field cron expression .* it has 6 fields/);
    assert.match(cronProblem('61 * * * *')!, /not a valid cron expression/);
    assert.match(cronProblem('every day')!, /2 fields/);
  });

  it('fires a job at each matching minute and lists its next run', async () => {
    const clock = new FakeClock(T0);
    const scheduler = new Scheduler(quietLog, clock);
    const fired: number[] = [];
    scheduler.add({ id: 'every5', cron: '*/5 * * * *', run: async () => void fired.push(clock.now()) });
    scheduler.start();
    assert.equal(scheduler.list()[0].next_run, '2026-03-02T10:05:00.000Z');
    await clock.advance(4 * 60_000);
    assert.equal(fired.length, 0);
    await clock.advance(60_000);
    assert.deepEqual(fired.map((t) => new Date(t).toISOString()), ['2026-03-02T10:05:00.000Z']);
    await clock.advance(10 * 60_000);
    assert.equal(fired.length, 3);
    const status = scheduler.list()[0];
    assert.equal(status.next_run, '2026-03-02T10:20:00.000Z');
    assert.equal(status.last_status, 'success');
    scheduler.stop();
    assert.equal(clock.pending, 0);
    await clock.advance(60 * 60_000);
    assert.equal(fired.length, 3, 'a stopped scheduler fires nothing');
  });

  it('never starts a job twice: a tick while it still runs is skipped', async () => {
    const clock = new FakeClock(T0);
    const scheduler = new Scheduler(quietLog, clock);
    let starts = 0;
    let release!: () => void;
    scheduler.add({
      id: 'slow',
      cron: '* * * * *',
      run: () => {
        starts++;
        return new Promise<void>((r) => (release = r));
      },
    });
    scheduler.start();
    await clock.advance(60_000);
    assert.equal(starts, 1);
    await clock.advance(3 * 60_000);
    assert.equal(starts, 1);
    assert.equal(scheduler.list()[0].skipped, 3);
    assert.equal(scheduler.list()[0].running, true);
    release();
    await new Promise((r) => setImmediate(r));
    await clock.advance(60_000);
    assert.equal(starts, 2);
    scheduler.stop();
  });

  it('keeps a bad expression out with its error and runs the others', async () => {
    const clock = new FakeClock(T0);
    const errors: string[] = [];
    const scheduler = new Scheduler({ ...quietLog, error: (m: string) => void errors.push(m) }, clock);
    let good = 0;
    scheduler.add({ id: 'stream:broken', kind: 'stream', cron: '0 25 * * *', run: async () => assert.fail('never runs') });
    scheduler.add({ id: 'stream:fine', kind: 'stream', cron: '* * * * *', run: async () => void good++ });
    scheduler.start();
    await clock.advance(2 * 60_000);
    assert.equal(good, 2);
    const broken = scheduler.list().find((s) => s.name === 'stream:broken')!;
    assert.equal(broken.next_run, null);
    assert.match(broken.error!, /'0 25 \* \* \*' is not a valid cron expression/);
    assert.match(errors[0], /schedule 'stream:broken' will not run/);
    scheduler.stop();
  });
});

describe('scheduled streams and jobs of other plugins', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({
      plugins: [path.join(FIXTURE_PLUGINS, 'script-extras')],
      builtIn: ['models', 'scripts', 'streams'],
      // This test is about the scheduler: it runs on the wall clock (and asserts nothing a tick would change).
      scheduler: true,
      files: {
        'ingest/mark.ts': "export default async (ctx: any) => { await ctx.db.run('CREATE TABLE IF NOT EXISTS marks (marked_at TIMESTAMP); INSERT INTO marks VALUES (now())'); };\n",
      },
      projectYml: [
        'streams:',
        '  hourly:',
        '    schedule: "0 * * * *"',
        '    steps:',
        '      - ingest: [mark]',
        '  bad_cron:',
        '    schedule: "every hour"',
        '    steps:',
        '      - ingest: [mark]',
      ].join('\n'),
    });
  });
  after(async () => s?.close());

  it('lists stream schedules and registered jobs with their next runs, and a bad one with its error', async () => {
    const r = await s.request('GET', '/api/scheduler');
    assert.equal(r.status, 200);
    assert.equal(r.body.running, true);
    const byName = Object.fromEntries((r.body.schedules as Array<{ name: string }>).map((x) => [x.name, x])) as unknown as Record<string, { kind: string; next_run: string | null; error?: string }>;
    assert.deepEqual(Object.keys(byName).sort(), ['fixture:tick', 'stream:bad_cron', 'stream:hourly']);
    assert.equal(byName['fixture:tick'].kind, 'job');
    const tick = Date.parse(byName['fixture:tick'].next_run!);
    assert.ok(tick > Date.now() - 1000 && tick <= Date.now() + 60_000, byName['fixture:tick'].next_run!);
    assert.equal(new Date(byName['stream:hourly'].next_run!).getMinutes(), 0);
    assert.equal(byName['stream:bad_cron'].next_run, null);
    assert.match(byName['stream:bad_cron'].error!, /not a 5-field cron expression/);
    const streams = await s.request('GET', '/api/streams');
    assert.equal(streams.body.streams.find((x: { name: string }) => x.name === 'hourly').next_run, byName['stream:hourly'].next_run);
  });

  it('runs a scheduled stream when its time comes on the clock (trigger: schedule)', async () => {
    const service = s.app.services.get<StreamsService>('streams');
    const clock = new FakeClock(Date.parse('2026-03-02T10:59:00.000Z'));
    const scheduler = new Scheduler(quietLog, clock);
    scheduler.add(streamJob(service, service.list().find((d) => d.name === 'hourly')!));
    scheduler.start();
    await clock.advance(59_000);
    assert.equal(scheduler.list()[0].running, false);
    await clock.advance(1_000);
    assert.equal(scheduler.list()[0].running, true);
    await scheduler.settled();
    assert.equal(scheduler.list()[0].last_status, 'success');
    // (At least one: the server's own scheduler would add a run if the real clock passed the hour meanwhile.)
    assert.ok(((await s.db.value<number>('SELECT count(*)::INT FROM marks')) ?? 0) >= 1);
    const history = await s.request('GET', '/api/history?name=hourly');
    assert.equal(history.body.runs[0].trigger, 'schedule');
    assert.equal(history.body.runs[0].status, 'success');
    scheduler.stop();
  });
});
