import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, it, mock } from 'node:test';
import { isDpError } from '../../sdk/errors.js';
import { constantTimeEqual, hashPassword, hashToken, newToken, PBKDF2_ITERATIONS, TOKEN_PATTERN, verifyPassword } from '../../kernel/auth/crypto.js';
import { tokenTtlDays } from '../../kernel/auth/index.js';
import { LoginRateLimiter } from '../../kernel/auth/rate-limit.js';
import { validatePassword, validateRole, validateUsername } from '../../kernel/auth/users.js';
import { verifyWebhookSecret, webhookSecretVar } from '../../kernel/auth/webhooks.js';

function thrown(fn: () => unknown): { status: number; code: string; message: string; details: Record<string, unknown> } {
  try {
    fn();
  } catch (e) {
    assert.ok(isDpError(e), `expected a DpError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected an error');
}

describe('constant-time comparison', () => {
  it('accepts equal inputs and refuses any difference, including equal-length and different-length ones', () => {
    assert.equal(constantTimeEqual('dp_secret-value', 'dp_secret-value'), true);
    assert.equal(constantTimeEqual(Buffer.from('abc'), Buffer.from('abc')), true);
    assert.equal(constantTimeEqual('dp_secret-value', 'dp_secret-valuf'), false);
    assert.equal(constantTimeEqual('aaaaaaaaaaaaaaaa', 'baaaaaaaaaaaaaaa'), false);
    assert.equal(constantTimeEqual('short', 'a much longer value'), false);
    assert.equal(constantTimeEqual('', 'x'), false);
    assert.equal(constantTimeEqual('', ''), true);
  });

  it('decides through crypto.timingSafeEqual for passwords, tokens and webhook secrets, also on length mismatch', async () => {
    const spy = mock.method(crypto, 'timingSafeEqual');
    try {
      constantTimeEqual('short', 'a much longer value');
      assert.equal(spy.mock.callCount(), 1, 'a length mismatch must not return before the constant-time comparison');

      const stored = await hashPassword('correct horse');
      spy.mock.resetCalls();
      assert.equal(await verifyPassword('correct horsf', stored), false);
      assert.equal(spy.mock.callCount(), 1);

      spy.mock.resetCalls();
      assert.throws(() => verifyWebhookSecret('orders', 'wrong-secret!', (k) => (k === 'SERVICE_WEBHOOK_SECRET' ? 'right-secret!' : undefined)));
      assert.equal(spy.mock.callCount(), 1);
    } finally {
      spy.mock.restore();
    }
  });
});

describe('password hashing', () => {
  it('is PBKDF2-SHA256 with 100000 iterations and a fresh 32-byte salt', async () => {
    assert.equal(PBKDF2_ITERATIONS, 100_000);
    const a = await hashPassword('hunter22');
    const b = await hashPassword('hunter22');
    assert.equal(Buffer.from(a.salt, 'hex').length, 32);
    assert.notEqual(a.salt, b.salt, 'each hash gets its own salt');
    assert.notEqual(a.hash, b.hash);
    const expected = crypto.pbkdf2Sync('hunter22', Buffer.from(a.salt, 'hex'), 100_000, 32, 'sha256').toString('hex');
    assert.equal(a.hash, expected);
    assert.equal(await verifyPassword('hunter22', a), true);
    assert.equal(await verifyPassword('hunter23', a), false);
  });
});

describe('tokens', () => {
  it('are opaque 32-byte random values and only their SHA-256 is derived for storage', () => {
    const t = newToken();
    assert.match(t, TOKEN_PATTERN);
    assert.equal(Buffer.from(t.slice(3), 'base64url').length, 32);
    assert.notEqual(newToken(), t);
    assert.equal(hashToken(t), crypto.createHash('sha256').update(t).digest('hex'));
    assert.equal(TOKEN_PATTERN.test(t + 'x'), false);
  });

  it('lifetime comes from auth.token_ttl_days (default 30) and refuses nonsense', () => {
    assert.equal(tokenTtlDays({}), 30);
    assert.equal(tokenTtlDays({ auth: { token_ttl_days: 7 } }), 7);
    assert.equal(thrown(() => tokenTtlDays({ auth: { token_ttl_days: 0 } })).details.field, 'auth.token_ttl_days');
    assert.equal(thrown(() => tokenTtlDays({ auth: { token_ttl_days: 'ten' } })).details.field, 'auth.token_ttl_days');
    assert.equal(thrown(() => tokenTtlDays({ auth: 'on' })).details.field, 'auth');
  });
});

describe('user field rules', () => {
  it('name the field that is wrong', () => {
    assert.equal(validateUsername('ann.b-c_9'), 'ann.b-c_9');
    for (const bad of ['', 'ann b', 'ann/b', 'émile', 'x'.repeat(65), 42]) assert.equal(thrown(() => validateUsername(bad)).details.field, 'username');
    assert.equal(validatePassword('abcd'), 'abcd');
    for (const bad of ['abc', '', null]) assert.equal(thrown(() => validatePassword(bad)).details.field, 'password');
    for (const role of ['viewer', 'editor', 'admin']) assert.equal(validateRole(role), role);
    for (const bad of ['root', 'Admin', undefined]) assert.equal(thrown(() => validateRole(bad)).details.field, 'role');
  });
});

describe('login rate limiter', () => {
  it('refuses after 10 failures in 15 minutes until the oldest failure ages out', () => {
    let now = 1_000_000;
    const limiter = new LoginRateLimiter(10, 15 * 60_000, () => now);
    for (let i = 0; i < 9; i++) {
      limiter.recordFailure('10.0.0.1', 'x');
      now += 1000;
    }
    assert.equal(limiter.retryAfterSeconds('10.0.0.1', 'x'), 0);
    limiter.recordFailure('10.0.0.1', 'x');
    const wait = limiter.retryAfterSeconds('10.0.0.1', 'x');
    assert.ok(wait > 0 && wait <= 15 * 60, `retry after ${wait}`);
    assert.equal(limiter.retryAfterSeconds('10.0.0.2', 'x'), 0, 'other addresses are not affected');
    assert.equal(limiter.retryAfterSeconds('10.0.0.1', 'y'), 0, 'other usernames from the address are not affected');
    now += wait * 1000;
    assert.equal(limiter.retryAfterSeconds('10.0.0.1', 'x'), 0, 'allowed again once the window has passed');
  });

  it('a successful login clears only the failures of its own username', () => {
    // A spread limit of 2 too, so the address's count shows what a success forgives.
    const limiter = new LoginRateLimiter(2, 60_000, Date.now, 2);
    limiter.recordFailure('a', 'alice');
    limiter.recordFailure('a', 'alice');
    assert.ok(limiter.retryAfterSeconds('a', 'alice') > 0);
    limiter.recordSuccess('a', 'alice');
    assert.equal(limiter.retryAfterSeconds('a', 'alice'), 0);
    limiter.recordFailure('a', 'bob');
    limiter.recordSuccess('a', 'alice');
    limiter.recordFailure('a', 'bob');
    assert.ok(limiter.retryAfterSeconds('a', 'alice') > 0, "alice's login did not forgive the guesses at bob");
  });
});

describe('webhook secrets', () => {
  const env = (vars: Record<string, string>) => (k: string) => vars[k];

  it('prefers the per-webhook secret over the global one', () => {
    assert.equal(webhookSecretVar('stripe-events'), 'SERVICE_WEBHOOK_SECRET_STRIPE_EVENTS');
    const vars = env({ SERVICE_WEBHOOK_SECRET_STRIPE_EVENTS: 'per-hook', SERVICE_WEBHOOK_SECRET: 'global' });
    verifyWebhookSecret('stripe-events', 'per-hook', vars);
    assert.equal(thrown(() => verifyWebhookSecret('stripe-events', 'global', vars)).code, 'webhook_secret_invalid');
    verifyWebhookSecret('other', 'global', vars);
  });

  it('answers 401 without the header and with a wrong one, and stays closed when nothing is configured', () => {
    const vars = env({ SERVICE_WEBHOOK_SECRET: 's3cret-global' });
    const missing = thrown(() => verifyWebhookSecret('orders', undefined, vars));
    assert.equal(missing.status, 401);
    const wrong = thrown(() => verifyWebhookSecret('orders', 's3cret-globaX', vars));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.code, 'webhook_secret_invalid');
    assert.ok(!JSON.stringify(wrong).includes('s3cret-global') && !wrong.message.includes('s3cret-global'), 'the secret never appears in the error');
    const closed = thrown(() => verifyWebhookSecret('orders', 'anything', env({})));
    assert.equal(closed.status, 403);
    assert.equal(closed.code, 'webhook_not_configured');
  });

  it('SERVICE_WEBHOOK_OPEN=true lets calls in without a secret', () => {
    verifyWebhookSecret('orders', undefined, env({ SERVICE_WEBHOOK_OPEN: 'true' }));
    assert.equal(thrown(() => verifyWebhookSecret('orders', undefined, env({ SERVICE_WEBHOOK_OPEN: 'false' }))).status, 403);
  });
});
