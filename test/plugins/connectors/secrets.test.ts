/**
 * Connector secrets as a deployment sees them: the real `dp serve` process (its log read whole)
 * and a real PostgreSQL. The password given at setup appears in .env and nowhere else: not in
 * project.yml, the generated script, any response (setup, list, test, discover, sync, health,
 * CDC) or the server's log, also when a connection with it fails.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { makeProject, spawnServe, type ServeProcess } from '../../helpers.js';
import { startPostgres, type RunningDatabase } from '../../support/databases.js';

const PASSWORD = 'Sup3r-s3cret-pg-pass!';

describe('connector secrets never leave .env', () => {
  let source: RunningDatabase;
  let root: string;
  let served: ServeProcess | undefined;
  let url: string;
  const stderr = () => served?.output.stderr() ?? '';

  before(async () => {
    source = await startPostgres({ password: PASSWORD });
    const c = new pg.Client({ host: source.host, port: source.port, user: source.user, password: PASSWORD, database: source.database });
    await c.connect();
    await c.query('CREATE TABLE items (id INT, label TEXT); INSERT INTO items VALUES (1, $$a$$), (2, $$b$$)');
    await c.end();
    root = makeProject({ 'project.yml': 'name: sec\ndatabase:\n  path: s.duckdb\n' });
    served = await spawnServe(root, { args: ['--host', '127.0.0.1'], env: { DP_LOG_SILENT: '0', DP_LOG_LEVEL: 'debug' } });
    url = served.url;
  });

  after(async () => {
    await served?.stop();
    await source?.stop();
  });

  it('appears in .env only', async () => {
    const bodies: string[] = [];
    const call = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(url + p, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
      const text = await r.text();
      bodies.push(text);
      return { status: r.status, text };
    };
    const config = { host: source.host, port: source.port, database: source.database, user: source.user, password: PASSWORD };
    assert.equal((await call('POST', '/api/connectors/test', { connector_type: 'postgres', config })).status, 200);
    assert.equal((await call('POST', '/api/connectors/discover', { connector_type: 'postgres', config })).status, 200);
    const setup = await call('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: 'vault', config, tables: ['items'] });
    assert.equal(setup.status, 200, setup.text);
    assert.equal((await call('POST', '/api/connectors/sync/vault')).status, 200);
    for (const p of ['/api/connectors', '/api/connectors/health', '/api/cdc', '/api/cdc/vault', '/api/connectors/available']) assert.equal((await call('GET', p)).status, 200, p);
    await call('POST', '/api/connectors/test', { connection_name: 'vault' });
    // A failing connection: a wrong password on the configured connector and on an ad-hoc test.
    await call('POST', '/api/connectors/test', { connector_type: 'postgres', config: { ...config, password: PASSWORD + 'x' } });
    await call('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: 'vault2', config: { ...config, password: PASSWORD + 'x' } });
    fs.writeFileSync(path.join(root, '.env'), fs.readFileSync(path.join(root, '.env'), 'utf8').replace(PASSWORD, PASSWORD + 'y'));
    const failed = await call('POST', '/api/connectors/sync/vault');
    assert.match(failed.text, /authentication failed/);
    await call('GET', '/api/files/project.yml');
    await call('GET', '/api/files/ingest/connector_vault.ts');

    for (const b of bodies) assert.ok(!b.includes(PASSWORD), `a response holds the password: ${b.slice(0, 300)}`);
    assert.ok(!fs.readFileSync(path.join(root, 'project.yml'), 'utf8').includes(PASSWORD));
    assert.ok(!fs.readFileSync(path.join(root, 'ingest', 'connector_vault.ts'), 'utf8').includes(PASSWORD));
    assert.ok(fs.readFileSync(path.join(root, '.env'), 'utf8').includes(`VAULT_PASSWORD=`));
    // The log is captured (its line reached the pipe), and holds no password.
    await served!.output.waitFor(/connector vault \(postgres\) set up/);
    assert.ok(!stderr().includes(PASSWORD), 'the server log holds the password');
  });
});
