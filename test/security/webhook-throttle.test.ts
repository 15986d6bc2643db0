/**
 * Issue 28 point 11: webhook secrets could be guessed without limit (30 wrong secrets, 30 × 401).
 * Wrong secrets are limited per webhook and client like logins: after 10 in 15 minutes the next
 * call, even with the right secret, answers 429 `too_many_webhook_failures` with Retry-After;
 * other webhooks and other clients keep their own counts. Over HTTP on a real server, and on the
 * guard for the cases that need several addresses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyWebhookSecret } from '../../kernel/auth/webhooks.js';
import { LoginRateLimiter } from '../../kernel/auth/rate-limit.js';
import { makeProject, startServer, type TestServer } from '../helpers.js';

const SECRETS = { SERVICE_WEBHOOK_SECRET_ORDERS: 'orders-secret-1', SERVICE_WEBHOOK_SECRET_REFUNDS: 'refunds-secret-1' };

describe('security: guessing webhook secrets', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ '.env': Object.entries(SECRETS).map(([k, v]) => `${k}=${v}`).join('\n') + '\n' }));
  });
  after(async () => s.close());

  const post = (name: string, secret: string) =>
    fetch(`${s.url}/api/webhook/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-webhook-secret': secret }, body: '{"a":1}' });

  it('refuses every call past 10 wrong secrets, the right one included, with 429 and Retry-After', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await post('orders', `guess-${i}`)).status, 401, `guess ${i}`);
    const blocked = await post('orders', SECRETS.SERVICE_WEBHOOK_SECRET_ORDERS);
    assert.equal(blocked.status, 429);
    const body = (await blocked.json()) as { error: { code: string; details: Record<string, unknown> } };
    assert.equal(body.error.code, 'too_many_webhook_failures');
    assert.equal(body.error.details.webhook, 'orders');
    const retry = Number(blocked.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 15 * 60, `Retry-After ${retry}`);
    assert.equal((await post('refunds', SECRETS.SERVICE_WEBHOOK_SECRET_REFUNDS)).status, 200, 'another webhook keeps its own count');
  });

  it('counts per client: another address may still call the webhook', () => {
    const limiter = new LoginRateLimiter();
    const lookup = (k: string) => (SECRETS as Record<string, string>)[k];
    const call = (client: string, secret: string) => {
      try {
        verifyWebhookSecret('orders', secret, lookup, { limiter, client });
        return 200;
      } catch (e) {
        return (e as { status: number }).status;
      }
    };
    for (let i = 0; i < 10; i++) assert.equal(call('10.0.0.1', 'wrong'), 401);
    assert.equal(call('10.0.0.1', SECRETS.SERVICE_WEBHOOK_SECRET_ORDERS), 429);
    assert.equal(call('10.0.0.2', SECRETS.SERVICE_WEBHOOK_SECRET_ORDERS), 200);
  });
});
