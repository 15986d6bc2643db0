/**
 * Issue 34 point 7: `POST /api/import` multipart without a boundary answered 500. Every body the
 * multipart parser cannot read (no boundary, an empty one, a truncated body, a part cut short)
 * is a 400 `invalid_multipart` in dp's shape on every upload route; other content types keep
 * their answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';

const PART = '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\n';

describe('reliability: malformed multipart uploads', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(async () => s.close());

  const cases: Array<[string, string, string]> = [
    ['no boundary', 'multipart/form-data', PART + 'a\n1\n\r\n--xyz--\r\n'],
    ['only a charset', 'multipart/form-data; charset=utf-8', 'x'],
    ['empty boundary', 'multipart/form-data; boundary=', 'x'],
    ['boundary never in the body', 'multipart/form-data; boundary=xyz', 'garbage'],
    ['truncated after a part header', 'multipart/form-data; boundary=xyz', PART + 'a\n1\n'],
    ['no closing boundary', 'multipart/form-data; boundary=xyz', PART + 'a\n1\n\r\n'],
  ];
  for (const [name, contentType, body] of cases) {
    it(`${name}: 400 invalid_multipart`, async () => {
      const res = await s.request('POST', '/api/import?table=t', body, { headers: { 'content-type': contentType } });
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(Object.keys(res.body), ['error']);
      assert.equal(res.body.error.code, 'invalid_multipart');
      assert.doesNotMatch(res.body.error.message, /\/tmp|\/home|at .*\.js/);
    });
  }

  it('a well-formed upload still imports', async () => {
    const res = await s.request('POST', '/api/import?table=ok', PART + 'a\n1\n\r\n--xyz--\r\n', { headers: { 'content-type': 'multipart/form-data; boundary=xyz' } });
    assert.equal(res.status, 200, res.text);
  });
});
