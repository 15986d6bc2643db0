/**
 * Test servers never run on the wall clock: the shop example's `events_hourly` stream
 * (`15 * * * *`) once fired while a test crossed minute 15 and changed what `dp tables` listed.
 * startServer, startTestServer and a spawned `dp serve --no-scheduler` keep the schedules listed
 * but never arm them; a test about time asks for the scheduler.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startTestServer } from '../../sdk/testing.js';
import { copyShop, startServer, type TestServer } from '../helpers.js';

describe('servers in tests run without the scheduler', () => {
  const servers: Array<{ close(): Promise<void> }> = [];
  after(async () => {
    for (const s of servers) await s.close();
  });

  it('startServer lists the example schedules but never arms them', async () => {
    const s: TestServer = await startServer(copyShop());
    servers.push(s);
    const r = await s.request('GET', '/api/scheduler');
    assert.equal(r.status, 200);
    assert.equal(r.body.running, false);
    assert.ok(r.body.schedules.some((x: { name: string }) => x.name === 'stream:events_hourly'), JSON.stringify(r.body.schedules));
  });

  it('startServer with scheduler: true runs them (for a test about time)', async () => {
    const s = await startServer(copyShop(), { scheduler: true });
    servers.push(s);
    const r = await s.request('GET', '/api/scheduler');
    assert.equal(r.body.running, true);
  });

  it('startTestServer leaves the scheduler off unless asked', async () => {
    const projectYml = 'streams:\n  every_minute:\n    schedule: "* * * * *"\n    steps:\n      - transform: [all]\n';
    const off = await startTestServer({ plugins: [], builtIn: ['models', 'scripts', 'streams'], projectYml });
    servers.push(off);
    assert.equal((await off.request('GET', '/api/scheduler')).body.running, false);
    const on = await startTestServer({ plugins: [], builtIn: ['models', 'scripts', 'streams'], projectYml, scheduler: true });
    servers.push(on);
    assert.equal((await on.request('GET', '/api/scheduler')).body.running, true);
  });
});
