/**
 * Bad input of every kind is answered in dp's error shape with a clear code, never 500 and never
 * Fastify's or Node's own body: long names, bad %-encodings, long path parameters, oversized
 * headers, JSON of the wrong type, invalid JSON, wrong content types, absolute paths in messages.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';

/** Asserts the dp error body shape and returns the code. */
export function assertDpError(res: { status: number; body: any; text: string }, status: number, code?: string): void {
  assert.equal(res.status, status, res.text.slice(0, 300));
  assert.equal(typeof res.body?.error?.code, 'string', `dp error shape: ${res.text.slice(0, 300)}`);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.details, 'object');
  assert.deepEqual(Object.keys(res.body), ['error']);
  if (code) assert.equal(res.body.error.code, code, res.text.slice(0, 300));
}

/** Sends raw bytes and parses the HTTP response (status line, JSON body). */
export function rawRequest(url: string, request: string): Promise<{ status: number; body: any; text: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (data += c));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(data)?.[1] ?? 0);
      const text = data.slice(data.indexOf('\r\n\r\n') + 4);
      let body: any = null;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      resolve({ status, body, text });
    });
    socket.write(request, () => socket.end());
  });
}

describe('bad input answered in dp shape', () => {
  let s: TestServer;
  let root: string;

  before(async () => {
    root = makeProject({ 'transform/main/a.sql': 'SELECT 1 AS x\n', 'notes/a.sql': 'SELECT 1\n' });
    s = await startServer(root);
  });
  after(() => s.close());

  it('a 300-character model name is refused with 400, not 500', async () => {
    const r = await s.request('POST', '/api/models/create', { name: 'm'.repeat(300), schema_name: 'main', sql: 'SELECT 1' });
    assertDpError(r, 400, 'invalid_request');
    assert.match(r.body.error.message, /name/);
    const ok = await s.request('POST', '/api/models/create', { name: 'm'.repeat(128), schema_name: 'main', sql: 'SELECT 1' });
    assert.equal(ok.status, 201, ok.text);
  });

  it('a bad %-encoding in the URL is 400 invalid_url', async () => {
    assertDpError(await s.request('GET', '/api/models/%zz/notebook-view'), 400, 'invalid_url');
  });

  it('a 1000-character path parameter reaches the route; beyond the router limit it is 414 in dp shape', async () => {
    const long = await s.request('GET', `/api/models/${'x'.repeat(1000)}/notebook-view`);
    assertDpError(long, 404, 'model_not_found');
    assertDpError(await s.request('GET', `/api/models/${'x'.repeat(3000)}/notebook-view`), 414, 'path_parameter_too_long');
  });

  it('oversized headers are 431 headers_too_large in dp shape', async () => {
    const r = await rawRequest(s.url, `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertDpError(r, 431, 'headers_too_large');
  });

  it('a request that is not HTTP is 400 malformed_request in dp shape', async () => {
    assertDpError(await rawRequest(s.url, 'GARBAGE\r\n\r\n'), 400, 'malformed_request');
  });

  it('wrong JSON types are refused, not coerced', async () => {
    const r = await s.request('PUT', '/api/files/notes/b.sql', { content: 12345 });
    assertDpError(r, 400, 'invalid_request');
    assert.match(r.body.error.message, /content/);
    assertDpError(await s.request('POST', '/api/transform', { force: 'yes' }), 400, 'invalid_request');
    assertDpError(await s.request('POST', '/api/transform', { targets: 'a' }), 400, 'invalid_request');
    assertDpError(await s.request('POST', '/api/models/create', [{ name: 'x' }]), 400, 'invalid_request');
  });

  it('querystrings are coerced but refuse non-finite and out-of-range numbers', async () => {
    assert.equal((await s.request('GET', '/api/transform/runs?limit=5')).status, 200);
    assertDpError(await s.request('GET', '/api/transform/runs?limit=1e400'), 400, 'invalid_request');
    assertDpError(await s.request('GET', '/api/transform/runs?limit=99999999999999999999'), 400, 'invalid_request');
    assertDpError(await s.request('GET', '/api/transform/runs?limit=abc'), 400, 'invalid_request');
    const fresh = await s.request('GET', '/api/freshness?max_hours=1e400');
    if (fresh.status !== 404) assertDpError(fresh, 400, 'invalid_request');
  });

  it('invalid JSON, an empty JSON body, a wrong content type and a missing body are 400/415', async () => {
    assertDpError(await s.request('POST', '/api/models/create', '{"name": '), 400, 'invalid_json');
    assertDpError(await s.request('POST', '/api/models/create', ''), 400, 'invalid_json');
    assertDpError(await s.request('POST', '/api/models/create', 'name=x', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
    assertDpError(await s.request('POST', '/api/models/create'), 400, 'invalid_request');
    assertDpError(await s.request('POST', '/api/models/create', '{"__proto__": {"x": 1}}'), 400, 'invalid_json');
  });

  it('a multipart upload is parsed only by a route that takes uploads: any other route answers 415', async () => {
    const boundary = '----dp-test';
    const form = `--${boundary}\r\nContent-Disposition: form-data; name="sql"\r\n\r\nSELECT 1\r\n--${boundary}--\r\n`;
    const headers = { 'content-type': `multipart/form-data; boundary=${boundary}` };
    assertDpError(await s.request('POST', '/api/query', form, { headers }), 415, 'unsupported_media_type');
    // The import route still reads it: without a file field it says so in its own words.
    assertDpError(await s.request('POST', '/api/import', form, { headers }), 400);
  });

  it('no absolute path in a message: diff --against outside git', async () => {
    const r = await s.request('POST', '/api/diff', { against: 'main' });
    assertDpError(r, 400, 'not_a_git_repository');
    assert.ok(!r.text.includes(root), r.text);
  });
});
