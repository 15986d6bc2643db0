/**
 * Login rate limit (issue 10 point 10, issue 33 point 17): failures count per username from one
 * address (10), and more widely per address and per username (50), and a success forgives only
 * its own username's failures. On a shared machine everyone is 127.0.0.1: one person's typos
 * must not lock out the admin. Over HTTP against a real server (all requests come from
 * 127.0.0.1), and on the limiter for the cases that need several addresses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LoginRateLimiter } from '../../kernel/auth/rate-limit.js';
import { startKernelServer } from '../kernel/auth-server.js';
import { makeProject, type TestServer } from '../helpers.js';

describe('security: login rate limit over HTTP', () => {
  let s: TestServer;
  let admin: string;
  const login = (username: string, password: string) => s.request('POST', '/api/auth/login', { username, password });

  before(async () => {
    s = await startKernelServer(makeProject(), { auth: true });
    admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    for (const username of ['alice', 'bob', 'carol']) {
      assert.equal((await s.request('POST', '/api/users', { username, password: `pw-${username}`, role: 'viewer' }, { token: admin })).status, 201);
    }
  });
  after(async () => s.close());

  it("an account holder logging in between guesses does not reset the count of guesses at another account", async () => {
    for (let i = 0; i < 9; i++) assert.equal((await login('bob', `guess-${i}`)).status, 401);
    assert.equal((await login('alice', 'pw-alice')).status, 200, 'alice may log in');
    assert.equal((await login('bob', 'guess-9')).status, 401);
    const blocked = await login('bob', 'pw-bob');
    assert.equal(blocked.status, 429, 'the 11th attempt is refused even with the right password');
    assert.equal(blocked.body.error.code, 'too_many_login_attempts');
    const retry = Number(blocked.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 15 * 60, `Retry-After ${retry}`);
    assert.equal(blocked.body.error.details.limited_by, 'address_and_username');
    assert.equal((await login('carol', 'pw-carol')).status, 200, "bob's lock is not carol's");
  });

  it("ten wrong passwords of one user at 127.0.0.1 do not lock the admin out of the same address", async () => {
    for (let i = 0; i < 12; i++) assert.ok([401, 429].includes((await login('carol', `typo-${i}`)).status));
    assert.equal((await login('carol', 'pw-carol')).status, 429, 'carol herself waits');
    const root = await login('root', 'secret1');
    assert.equal(root.status, 200, root.text);
  });
});

describe('security: login rate limiter', () => {
  const WINDOW = 15 * 60_000;
  type Step = ['fail' | 'ok', string, string];
  const cases: Array<{ name: string; steps: Step[]; check: Array<[string, string, boolean]> }> = [
    {
      name: 'ten failures naming one username from one address block that pair only',
      steps: Array.from({ length: 10 }, (): Step => ['fail', '10.0.0.1', 'bob']),
      check: [
        ['10.0.0.1', 'bob', true],
        ['10.0.0.1', 'BOB', true],
        ['10.0.0.1', 'alice', false],
        ['10.0.0.2', 'bob', false],
      ],
    },
    {
      name: 'fifty failures naming one username from many addresses block that username everywhere',
      steps: Array.from({ length: 50 }, (_, i): Step => ['fail', `10.0.0.${i}`, 'bob']),
      check: [
        ['10.0.0.99', 'bob', true],
        ['10.0.0.99', 'alice', false],
      ],
    },
    {
      name: 'fifty failures from one address naming different usernames block the address',
      steps: Array.from({ length: 50 }, (_, i): Step => ['fail', '10.0.0.1', `user${i}`]),
      check: [
        ['10.0.0.1', 'anyone', true],
        ['10.0.0.2', 'anyone', false],
      ],
    },
    {
      name: 'nine failures each for several usernames from one address block none of them',
      steps: ['ann', 'ben', 'cal', 'dan'].flatMap((u) => Array.from({ length: 9 }, (): Step => ['fail', '10.0.0.1', u])),
      check: [
        ['10.0.0.1', 'ann', false],
        ['10.0.0.1', 'root', false],
      ],
    },
    {
      name: "a success clears its own username's failures",
      steps: [...Array.from({ length: 9 }, (): Step => ['fail', '10.0.0.1', 'alice']), ['ok', '10.0.0.1', 'alice'], ...Array.from({ length: 9 }, (): Step => ['fail', '10.0.0.1', 'alice'])],
      check: [['10.0.0.1', 'alice', false]],
    },
    {
      name: "a success as one username keeps the address's failures against others",
      steps: [
        ...Array.from({ length: 5 }, (): Step => ['fail', '10.0.0.1', 'bob']),
        ['ok', '10.0.0.1', 'alice'],
        ...Array.from({ length: 5 }, (): Step => ['fail', '10.0.0.1', 'bob']),
        ['ok', '10.0.0.1', 'alice'],
      ],
      check: [
        ['10.0.0.1', 'bob', true],
        ['10.0.0.1', 'alice', false],
        ['10.0.0.7', 'bob', false],
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const now = 1_000_000;
      const limiter = new LoginRateLimiter(10, WINDOW, () => now);
      for (const [kind, ip, username] of c.steps) {
        if (kind === 'fail') limiter.recordFailure(ip, username);
        else limiter.recordSuccess(ip, username);
      }
      for (const [ip, username, blocked] of c.check) {
        assert.equal(limiter.retryAfterSeconds(ip, username) > 0, blocked, `${username} from ${ip}`);
      }
    });
  }

  it('a blocked username is free again when the window has passed', () => {
    let now = 1_000_000;
    const limiter = new LoginRateLimiter(10, WINDOW, () => now);
    for (let i = 0; i < 50; i++) limiter.recordFailure(`10.0.1.${i}`, 'bob');
    const wait = limiter.retryAfterSeconds('10.0.2.1', 'bob');
    assert.ok(wait > 0 && wait <= 15 * 60);
    now += wait * 1000;
    assert.equal(limiter.retryAfterSeconds('10.0.2.1', 'bob'), 0);
  });
});
