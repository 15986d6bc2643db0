/**
 * `dp secrets set` reaches a running server (issue 33 point 9): the server re-reads .env when it
 * changes, so a rotated webhook secret takes effect at once (the old one stops working) instead
 * of at the next restart, while the CLI says "saved".
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, runCli, startServer, waitUntil, type TestServer } from '../helpers.js';

describe('a secret rotated with dp secrets set while the server runs', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({ '.env': 'SERVICE_WEBHOOK_SECRET_HOOK=old-secret-123\n' });
    s = await startServer(root);
  });
  after(async () => s.close());

  const post = (secret: string) =>
    fetch(`${s.url}/api/webhook/hook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-webhook-secret': secret }, body: '{"n":1}' }).then((r) => r.status);

  it('takes effect on the live server: the new secret is accepted, the old one refused', async () => {
    assert.equal(await post('old-secret-123'), 200);
    const set = runCli(['secrets', 'set', 'SERVICE_WEBHOOK_SECRET_HOOK', 'new-secret-456', '--project', root]);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /saved/);
    // The server learns of the change from a file-system event: wait for that state.
    await waitUntil(async () => (await post('new-secret-456')) === 200, 'the server to take the new secret');
    assert.equal(await post('old-secret-123'), 401);
  });
});

describe('an empty listing', () => {
  it('says there is nothing rather than "(no columns)"', () => {
    const r = runCli(['secrets', 'list', '--project', makeProject()]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), '(nothing to list)');
  });
});
