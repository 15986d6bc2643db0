import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, type TestServer } from '../helpers.js';
import { startKernelServer } from './auth-server.js';

const SECRET = 'S3cr3t-Value-XYZ-987';
const ROTATED = 'r0tated+Secret/Value=';

describe('secrets API: admin only, stored in .env, values never echoed', () => {
  let s: TestServer;
  let root: string;
  let admin: string;
  let editor: string;
  /** Every status line, header and body the server sent during this suite. */
  const seen: string[] = [];
  /** Every log line written while the suite ran. */
  const logged: string[] = [];
  const originalWrite = process.stderr.write.bind(process.stderr);
  const originalSilent = process.env.DP_LOG_SILENT;

  const call = async (method: string, url: string, body?: unknown, token?: string) => {
    const r = await s.request(method, url, body, { token });
    seen.push(`${r.status} ${[...r.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${r.text}`);
    return r;
  };

  before(async () => {
    root = makeProject({ '.env': '# connection settings\nDB_HOST=localhost\n\nexport OTHER_TOKEN=abc123\n' });
    s = await startKernelServer(root, { auth: true });
    admin = (await call('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    await call('POST', '/api/users', { username: 'ed', password: 'pw-ed', role: 'editor' }, admin);
    editor = (await call('POST', '/api/auth/login', { username: 'ed', password: 'pw-ed' })).body.token;
    process.env.DP_LOG_SILENT = '0';
    process.stderr.write = ((chunk: string | Uint8Array) => {
      logged.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
  });

  after(async () => {
    process.stderr.write = originalWrite;
    if (originalSilent === undefined) delete process.env.DP_LOG_SILENT;
    else process.env.DP_LOG_SILENT = originalSilent;
    await s.close();
  });

  it('an editor may not list, set or delete secrets', async () => {
    assert.equal((await call('GET', '/api/secrets', undefined, editor)).status, 403);
    assert.equal((await call('POST', '/api/secrets', { key: 'API_KEY', value: SECRET }, editor)).status, 403);
    assert.equal((await call('DELETE', '/api/secrets/DB_HOST', undefined, editor)).status, 403);
  });

  it('an admin sets, lists (masked), rotates and deletes a secret; .env keeps its other lines', async () => {
    const set = await call('POST', '/api/secrets', { key: 'API_KEY', value: SECRET }, admin);
    assert.equal(set.status, 200);
    assert.equal(set.body.key, 'API_KEY');
    assert.match(set.body.masked_value, /^\*+$/);

    const env = fs.readFileSync(path.join(root, '.env'), 'utf8');
    assert.match(env, /^# connection settings$/m);
    assert.match(env, /^export OTHER_TOKEN=abc123$/m);
    assert.match(env, new RegExp(`^API_KEY=${SECRET}$`, 'm'));
    assert.deepEqual(fs.readdirSync(root).filter((f) => f.endsWith('.tmp')), [], 'atomic write leaves no temp file');
    assert.equal(s.app.project.envVars.API_KEY, SECRET, 'the running server sees the new value');

    const list = await call('GET', '/api/secrets', undefined, admin);
    assert.deepEqual(
      list.body.map((r: { key: string }) => r.key),
      ['API_KEY', 'DB_HOST', 'OTHER_TOKEN'],
    );
    for (const row of list.body) assert.match(row.masked_value, /^\**$/);

    assert.equal((await call('POST', '/api/secrets', { key: 'API_KEY', value: ROTATED }, admin)).status, 200);
    assert.equal(fs.readFileSync(path.join(root, '.env'), 'utf8').match(/^API_KEY=/gm)?.length, 1, 'updated in place, not duplicated');
    assert.equal(s.app.secrets.get('API_KEY'), ROTATED);

    assert.equal((await call('DELETE', '/api/secrets/API_KEY', undefined, admin)).status, 200);
    assert.equal((await call('DELETE', '/api/secrets/API_KEY', undefined, admin)).status, 404);
    assert.doesNotMatch(fs.readFileSync(path.join(root, '.env'), 'utf8'), /API_KEY/);
  });

  it('bad requests carrying a secret answer 400 without repeating it', async () => {
    const badKey = await call('POST', '/api/secrets', { key: '1 bad key', value: SECRET }, admin);
    assert.equal(badKey.status, 400);
    assert.equal(badKey.body.error.details.field, 'key');
    const extra = await call('POST', '/api/secrets', { key: 'OK_KEY', value: SECRET, note: SECRET }, admin);
    assert.equal(extra.status, 400);
    const tooLong = await call('POST', '/api/secrets', { key: 'OK_KEY', value: SECRET.repeat(4000) }, admin);
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.details.field, 'value');
    const badJson = await call('POST', '/api/secrets', `{"key": "OK_KEY", "value": "${SECRET}"`, admin);
    assert.equal(badJson.status, 400);
  });

  it('no response and no log line of this suite ever held a secret value', () => {
    assert.ok(seen.length >= 12, `collected ${seen.length} responses`);
    assert.ok(logged.some((l) => l.includes('secret set')), 'the set was logged (by key), so the log check is not vacuous');
    for (const text of [...seen, ...logged]) {
      assert.ok(!text.includes(SECRET), `secret leaked in: ${text.slice(0, 300)}`);
      assert.ok(!text.includes(ROTATED), `rotated secret leaked in: ${text.slice(0, 300)}`);
    }
  });
});
