/**
 * The connectors plugin's pure parts: `dp connect` option parsing, secret variable names, cron
 * due times of scheduled syncs, import table names, connection causes in words, the standard
 * generated script, and the extension point refusing malformed or duplicate types.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { configFromArgs } from '../../../plugins/connectors/commands.js';
import { tableNameOf } from '../../../plugins/connectors/import.js';
import { TypeRegistry } from '../../../plugins/connectors/registry.js';
import { dueAt } from '../../../plugins/connectors/scripts.js';
import { secretVarOf, validateSchedule } from '../../../plugins/connectors/service.js';
import { connectionCause } from '../../../plugins/connectors/types/connection-errors.js';
import { postgresType } from '../../../plugins/connectors/types/postgres.js';
import { webhookType } from '../../../plugins/connectors/types/webhook.js';
import { connectorScript, DpError } from '../../../sdk/index.js';
import { tempDir } from '../../helpers.js';

describe('connectors units', () => {
  it('builds the connector config from --config (text or file), --set and the shortcuts', () => {
    const dir = tempDir('dp-connect-');
    try {
      fs.writeFileSync(path.join(dir, 'c.json'), '{"host": "db", "port": 5432}');
      assert.deepEqual(configFromArgs({ config: 'c.json', set: ['ssl=true', 'schema=sales', 'port=6543'], user: 'u', 'api-key': 'k' }, dir), {
        host: 'db',
        port: 6543,
        ssl: true,
        schema: 'sales',
        user: 'u',
        api_key: 'k',
      });
      assert.deepEqual(configFromArgs({ config: '{"a": 1}', port: '7' }, dir), { a: 1, port: 7 });
      assert.throws(() => configFromArgs({ set: ['novalue'] }, dir), (e: DpError) => e.status === 400 && e.details.field === 'set');
      assert.throws(() => configFromArgs({ config: '[1]' }, dir), (e: DpError) => e.status === 400);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names secret variables <CONNECTION>_<PARAM>, or by the type's x-env", () => {
    const r = new TypeRegistry();
    r.register(postgresType, 'connectors');
    r.register(webhookType, 'connectors');
    assert.equal(secretVarOf(r.get('postgres'), 'shop_db', 'password'), 'SHOP_DB_PASSWORD');
    assert.equal(secretVarOf(r.get('webhook'), 'orders', 'secret'), 'SERVICE_WEBHOOK_SECRET_ORDERS');
    assert.deepEqual(r.get('postgres').secrets, ['password']);
  });

  it('refuses a malformed or duplicate connector type at registration, and unknown types with 404', () => {
    const r = new TypeRegistry();
    r.register(postgresType, 'connectors');
    assert.throws(() => r.register(postgresType, 'other'), /contributed by both 'connectors' and 'other'/);
    assert.throws(() => r.register({ ...postgresType, type: 'Bad Type' }, 'other'), /lower-case identifier/);
    assert.throws(() => r.register({ ...postgresType, type: 'x', params: { type: 'object', properties: { a: { type: 'nonsense' } } } }, 'other'), /invalid params schema/);
    assert.throws(() => r.get('nope'), (e: DpError) => e.status === 404 && e.code === 'unknown_connector_type');
    assert.deepEqual(r.validate('postgres', { host: 'h', database: 'd', user: 'u' }), { host: 'h', database: 'd', user: 'u', port: 5432, schema: 'public', connect_timeout_seconds: 10 });
    assert.throws(() => r.validate('postgres', { host: 'h', database: 'd', user: 'u', extra: 1 }), (e: DpError) => e.details.field === 'extra');
  });

  it('knows when a cron schedule is due, and refuses a bad one', () => {
    const at = (iso: string) => new Date(iso);
    assert.equal(dueAt('*/15 * * * *', at('2026-01-01T10:30:00')), true);
    assert.equal(dueAt('*/15 * * * *', at('2026-01-01T10:31:00')), false);
    assert.equal(dueAt('0 6 * * *', at('2026-01-01T06:00:00')), true);
    assert.equal(dueAt('not cron', at('2026-01-01T06:00:00')), false);
    assert.equal(validateSchedule(null), null);
    assert.equal(validateSchedule('0 * * * *'), '0 * * * *');
    assert.throws(() => validateSchedule('0 * * *'), (e: DpError) => e.details.field === 'schedule');
    assert.throws(() => validateSchedule('99 * * * *'), (e: DpError) => e.status === 400 && /'schedule': '99 \* \* \* \*' is not a valid cron expression/.test(e.message));
  });

  it('derives import table names from file names', () => {
    assert.equal(tableNameOf('Budget 2024.xlsx'), 'budget_2024');
    assert.equal(tableNameOf('2024-sales.csv'), 't_2024_sales');
    assert.equal(tableNameOf('../../etc/passwd.csv'), 'passwd');
  });

  it('says why a connection failed, in words', () => {
    assert.equal(connectionCause({ code: 'ECONNREFUSED' }), 'connection refused');
    assert.equal(connectionCause({ code: 'ENOTFOUND' }), 'host not found');
    assert.equal(connectionCause({ code: '28P01', message: 'password authentication failed for user "x"' }), 'authentication failed');
    assert.equal(connectionCause({ code: 'ER_ACCESS_DENIED_ERROR' }), 'authentication failed');
    assert.equal(connectionCause({ code: 'ETIMEDOUT' }), 'timed out');
  });

  it('generates a script that delegates to ctx.connectors and names its targets', () => {
    const text = connectorScript({ name: 'shop', type: 'postgres' }, ['public.orders', 'customers'], 'landing');
    assert.match(text, /export default async \(ctx/);
    assert.match(text, /ctx\.connectors\.sync\("shop"\)/);
    assert.match(text, /Loads INSERT INTO landing\.orders/);
    assert.match(text, /Loads INSERT INTO landing\.customers/);
    assert.match(text, /throw new Error/);
  });
});
