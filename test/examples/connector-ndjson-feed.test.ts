/**
 * The example third-party connector type, tested the way its author would: through sdk/testing
 * with only itself and the connectors plugin, auth on. It loads, its type is listed with its
 * secret parameter, and a connection set up over HTTP syncs a feed into DuckDB.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type PluginTestServer } from '../../sdk/testing.js';
import { REPO_ROOT } from '../helpers.js';

describe('examples/plugins/connector-ndjson-feed through sdk/testing', () => {
  let s: PluginTestServer;
  let feed: http.Server;
  let url: string;
  const token = 'feed-token-example-31';
  before(async () => {
    feed = http.createServer((req, res) => {
      if (req.headers.authorization !== `Bearer ${token}`) return void (res.writeHead(401), res.end());
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      for (let i = 1; i <= 2500; i++) res.write(`${JSON.stringify({ id: i, kind: i % 2 ? 'click' : 'view', value: i / 4, meta: { n: i } })}\n`);
      res.end();
    });
    await new Promise<void>((r) => feed.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/events.ndjson`;
    s = await startTestServer({ plugins: [path.join(REPO_ROOT, 'examples', 'plugins', 'connector-ndjson-feed')], builtIn: ['connectors'], auth: true });
  });
  after(async () => {
    await s?.close();
    feed.closeAllConnections();
    await new Promise((r) => feed.close(r));
  });

  it('loads and contributes ndjson_feed with its secret parameter', async () => {
    const viewer = await s.caller('viewer');
    const r = await viewer.request('GET', '/api/connectors/available');
    assert.equal(r.status, 200, r.text);
    const type = r.body.find((t: { type: string }) => t.type === 'ndjson_feed');
    assert.equal(type.plugin, 'connector-ndjson-feed');
    assert.deepEqual(type.secret_params, ['token']);
  });

  it('tests, sets up and syncs a feed into DuckDB; the token stays in .env', async () => {
    const editor = await s.caller('editor');
    const config = { url, token, table: 'events' };
    const test = await editor.request('POST', '/api/connectors/test', { connector_type: 'ndjson_feed', config });
    assert.equal(test.body.ok, true, test.text);
    const denied = await editor.request('POST', '/api/connectors/test', { connector_type: 'ndjson_feed', config: { ...config, token: 'nope' } });
    assert.match(denied.body.message, /authentication failed/);
    const setup = await editor.request('POST', '/api/connectors/setup', { connector_type: 'ndjson_feed', connection_name: 'clicks', config, tables: ['events'], target_schema: 'landing' });
    assert.equal(setup.status, 200, setup.text);
    assert.ok(!setup.text.includes(token));
    const sync = await editor.request('POST', '/api/connectors/sync/clicks');
    assert.equal(sync.status, 200, sync.text);
    assert.equal(sync.body.results[0].status, 'success', sync.text);
    assert.equal(sync.body.results[0].rows_synced, 2500);
    const rows = await s.db.all<{ n: number; kinds: number; total: number }>('SELECT count(*) AS n, count(DISTINCT kind) AS kinds, sum(value) AS total FROM landing.events');
    assert.deepEqual({ ...rows[0] }, { n: 2500, kinds: 2, total: (2500 * 2501) / 8 });
    const yml = fs.readFileSync(path.join(s.projectRoot, 'project.yml'), 'utf8');
    assert.ok(!yml.includes(token));
    assert.match(yml, /token: \$\{CLICKS_TOKEN\}/);
    assert.ok(!fs.readFileSync(path.join(s.projectRoot, 'ingest', 'connector_clicks.ts'), 'utf8').includes(token));
  });
});
