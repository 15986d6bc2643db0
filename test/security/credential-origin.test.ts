/**
 * Credentials go only to the configured base origin (issue 28 point 10), with two local fake
 * servers: the configured API and another origin. A rest_api resource whose `path` is an
 * absolute (or protocol-relative) URL elsewhere, or a redirect to another origin, reaches the
 * other server without the token or the configured headers; a redirect on the same origin keeps
 * them. The spreadsheet connector's token follows the same rule (net.ts).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { restApiType } from '../../plugins/connectors-cloud/rest-api.js';
import { spreadsheetType } from '../../plugins/connectors-cloud/spreadsheet.js';
import { readAll } from '../plugins/connectors-cloud/support/read.js';

const TOKEN = 'tok-credential-7f3e91';
const KEY = 'key-header-0b5c22';

interface Fake {
  url: string;
  seen: Array<{ path: string; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

async function fake(routes: (path: string) => { status: number; location?: string; body?: string }): Promise<Fake> {
  const seen: Fake['seen'] = [];
  const server = http.createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    const r = routes(new URL(req.url ?? '/', 'http://x').pathname);
    res.writeHead(r.status, { 'content-type': r.body?.startsWith('id') ? 'text/csv' : 'application/json', ...(r.location ? { location: r.location } : {}) });
    res.end(r.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('security: credentials only to the configured origin', () => {
  let base: Fake;
  let other: Fake;
  before(async () => {
    other = await fake((p) => (p === '/sheet.csv' ? { status: 200, body: 'id,name\n1,x\n' } : { status: 200, body: '[{"id": 2}]' }));
    base = await fake((p) => {
      if (p === '/away') return { status: 302, location: `${other.url}/items` };
      if (p === '/home') return { status: 307, location: '/items' };
      if (p === '/sheet-away') return { status: 302, location: `${other.url}/sheet.csv` };
      return { status: 200, body: '[{"id": 1}]' };
    });
  });
  after(async () => {
    await base?.close();
    await other?.close();
  });

  const leaked = (f: Fake) => f.seen.filter((s) => JSON.stringify(s.headers).includes(TOKEN) || JSON.stringify(s.headers).includes(KEY));

  it('rest_api: an absolute resource URL or a redirect elsewhere gets no token and no configured header', async () => {
    const otherPort = new URL(other.url).port;
    for (const auth of ['bearer', 'header'] as const) {
      const config = {
        url: base.url,
        auth,
        token: TOKEN,
        headers: { 'x-extra-key': KEY },
        resources: [
          { name: 'absolute', path: `${other.url}/items` },
          { name: 'protocol_relative', path: `//127.0.0.1:${otherPort}/items` },
          { name: 'redirected', path: '/away' },
          { name: 'home', path: '/home' },
        ],
      };
      for (const table of ['absolute', 'protocol_relative', 'redirected', 'home']) {
        await readAll(restApiType, config, { table }).catch(() => undefined);
      }
    }
    assert.ok(other.seen.length >= 4, 'the other origin was asked (so the test can fail)');
    assert.deepEqual(leaked(other), [], 'no credential reached the other origin');
    const homeCalls = base.seen.filter((s) => s.path.startsWith('/items'));
    assert.ok(homeCalls.length >= 2, 'the same-origin redirect was followed');
    assert.ok(homeCalls.every((s) => JSON.stringify(s.headers).includes(TOKEN) && s.headers['x-extra-key'] === KEY), 'a same-origin redirect keeps the credentials');
  });

  it('spreadsheet: a CSV-export URL redirected to another origin drops the token', async () => {
    other.seen.length = 0;
    const r = await readAll(spreadsheetType, { url: `${base.url}/sheet-away`, token: TOKEN, table_name: 'sheet' }, { table: 'sheet' }).catch((e) => e);
    assert.ok(other.seen.length >= 1, `the redirect was followed: ${String(r?.message ?? '')}`);
    assert.deepEqual(leaked(other), []);
  });
});
