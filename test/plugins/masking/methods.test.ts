/**
 * One unit test per masking method: the SQL expression runs in a real DuckDB (deterministic
 * output, NULL input, wrong-type input), and its JavaScript twin (the post-execution fallback)
 * must give the same answer.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { MethodCatalog } from '../../../plugins/masking/catalog.js';
import { bootApp, makeProject } from '../../helpers.js';

const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

describe('masking methods', () => {
  let app: App;
  const catalog = new MethodCatalog();
  before(async () => {
    app = await bootApp(makeProject());
  });
  after(async () => app.close());

  /** Masks `literal` (a SQL expression of the given type) with a method, in SQL and in JavaScript. */
  async function mask(method: string, literal: string, type: string, config: Record<string, unknown> = {}) {
    const cfg = catalog.normalizeConfig(method, config);
    const expr = catalog.expression(method, '"c"', cfg, { type });
    // Keyed masks read their padded key from _masking.keys: write this catalog's keys there.
    await catalog.keys.flush(app.db);
    const r = await app.db.query(`SELECT ${expr} AS m, c FROM (SELECT CAST(${literal} AS ${type}) AS c)`);
    const sqlValue = r.rows[0][0];
    const jsValue = catalog.apply(method, r.rows[0][1], cfg, { type });
    return { sql: sqlValue, js: jsValue, type: r.column_types[0] };
  }

  async function expectBoth(method: string, literal: string, type: string, expected: unknown, config: Record<string, unknown> = {}) {
    const out = await mask(method, literal, type, config);
    assert.deepEqual(out.sql, expected, `${method}(${literal}) in SQL`);
    assert.deepEqual(out.js, expected, `${method}(${literal}) in JavaScript`);
    return out;
  }

  it('lists fourteen built-in methods, each with an object config schema', () => {
    const list = catalog.list();
    assert.deepEqual(
      list.map((m) => m.name).sort(),
      ['consistent_hash', 'credit_card', 'date_shift', 'email', 'first_initial', 'hash', 'ip_address', 'noise', 'null', 'partial', 'phone', 'range', 'redact', 'truncate'],
    );
    for (const m of list) assert.equal(m.config_schema.type, 'object', m.name);
  });

  it('hash: first 8 hex characters of SHA-256', async () => {
    await expectBoth('hash', "'ada@example.com'", 'VARCHAR', sha('ada@example.com').slice(0, 8));
    await expectBoth('hash', 'NULL', 'VARCHAR', null);
    await expectBoth('hash', '42', 'INTEGER', sha('42').slice(0, 8));
  });

  it('redact: ***', async () => {
    await expectBoth('redact', "'secret'", 'VARCHAR', '***');
    await expectBoth('redact', 'NULL', 'VARCHAR', null);
    await expectBoth('redact', '42', 'INTEGER', '***');
  });

  it('null: NULL of the column type', async () => {
    const out = await expectBoth('null', "'secret'", 'VARCHAR', null);
    assert.equal(out.type, 'VARCHAR');
    const n = await expectBoth('null', '5', 'INTEGER', null);
    assert.equal(n.type, 'INTEGER');
    await expectBoth('null', 'NULL', 'DATE', null);
  });

  it('partial: first/last N shown, middle starred', async () => {
    await expectBoth('partial', "'abcdefgh'", 'VARCHAR', 'ab****gh', { show_first: 2, show_last: 2 });
    await expectBoth('partial', "'abcdefgh'", 'VARCHAR', '********');
    await expectBoth('partial', "'abc'", 'VARCHAR', '***', { show_first: 2, show_last: 2 });
    await expectBoth('partial', "'abcdef'", 'VARCHAR', '****ef', { show_last: 2 });
    await expectBoth('partial', 'NULL', 'VARCHAR', null, { show_first: 1 });
    await expectBoth('partial', '12345678', 'INTEGER', '12****78', { show_first: 2, show_last: 2 });
  });

  it('truncate: first N characters then ...', async () => {
    await expectBoth('truncate', "'Lovelace'", 'VARCHAR', 'Lov...');
    await expectBoth('truncate', "'Lovelace'", 'VARCHAR', 'Lovel...', { length: 5 });
    await expectBoth('truncate', 'NULL', 'VARCHAR', null);
    await expectBoth('truncate', '123456', 'INTEGER', '123...');
  });

  it('email: local part replaced, domain kept', async () => {
    await expectBoth('email', "'ada@example.com'", 'VARCHAR', '***@example.com');
    await expectBoth('email', "'not-an-email'", 'VARCHAR', '***');
    await expectBoth('email', 'NULL', 'VARCHAR', null);
    await expectBoth('email', '42', 'INTEGER', '***');
  });

  it('phone: last N digits kept', async () => {
    await expectBoth('phone', "'+44 20 7946 0001'", 'VARCHAR', '+** ** **** 0001');
    await expectBoth('phone', "'+44 20 7946 0001'", 'VARCHAR', '+** ** **** **01', { show_last: 2 });
    await expectBoth('phone', "'12'", 'VARCHAR', '**');
    await expectBoth('phone', 'NULL', 'VARCHAR', null);
    await expectBoth('phone', '5551234', 'INTEGER', '***1234');
  });

  it('first_initial: initials with periods', async () => {
    await expectBoth('first_initial', "'Ada Lovelace'", 'VARCHAR', 'A.L.');
    await expectBoth('first_initial', "'  tim   berners-lee '", 'VARCHAR', 'T.B.');
    await expectBoth('first_initial', 'NULL', 'VARCHAR', null);
    await expectBoth('first_initial', '42', 'INTEGER', '4.');
  });

  it('ip_address: host octets become x', async () => {
    await expectBoth('ip_address', "'192.168.1.10'", 'VARCHAR', '192.168.x.x');
    await expectBoth('ip_address', "'192.168.1.10'", 'VARCHAR', '192.x.x.x', { keep_octets: 1 });
    await expectBoth('ip_address', "'192.168.1.10'", 'VARCHAR', 'x.x.x.x', { keep_octets: 0 });
    await expectBoth('ip_address', "'192.168.1.10'", 'VARCHAR', '192.168.1.x', { keep_octets: 3 });
    await expectBoth('ip_address', "'fe80::1'", 'VARCHAR', 'x.x.x.x');
    await expectBoth('ip_address', 'NULL', 'VARCHAR', null);
    await expectBoth('ip_address', '42', 'INTEGER', 'x.x.x.x');
  });

  it('credit_card: all but the last N digits starred', async () => {
    await expectBoth('credit_card', "'4111-1111-1111-1234'", 'VARCHAR', '****-****-****-1234');
    await expectBoth('credit_card', "'4111-1111-1111-1234'", 'VARCHAR', '****-****-****-**34', { show_last: 2 });
    await expectBoth('credit_card', 'NULL', 'VARCHAR', null);
    await expectBoth('credit_card', '4111111111111234', 'BIGINT', '************1234');
  });

  it('range: bucket <low>-<high>', async () => {
    await expectBoth('range', '52000', 'INTEGER', '50000-60000');
    await expectBoth('range', '52500', 'INTEGER', '52000-53000', { bucket_size: 1000 });
    await expectBoth('range', '-5', 'INTEGER', '-10000-0');
    await expectBoth('range', '1.2', 'DOUBLE', '1.0-1.5', { bucket_size: 0.5 });
    await expectBoth('range', 'NULL', 'INTEGER', null);
    await expectBoth('range', "'abc'", 'VARCHAR', null);
  });

  it('noise: deterministic per value and seed, within the percentage, integers stay integers', async () => {
    const a = await mask('noise', '52000', 'INTEGER');
    const b = await mask('noise', '52000', 'INTEGER');
    assert.equal(a.sql, b.sql);
    assert.equal(a.type, 'INTEGER');
    assert.equal(a.sql, a.js);
    assert.ok(Math.abs(Number(a.sql) - 52000) <= 5200, String(a.sql));
    const seeded = await mask('noise', '52000', 'INTEGER', { seed_key: 's3cret' });
    const other = await mask('noise', '52000', 'INTEGER', { seed_key: 'other' });
    assert.notEqual(seeded.sql, other.sql);
    const wide = await mask('noise', '1000', 'DOUBLE', { percentage: 50 });
    assert.ok(Math.abs(Number(wide.sql) - 1000) <= 500);
    assert.ok(Math.abs(Number(wide.sql) - Number(wide.js)) < 1e-6);
    await expectBoth('noise', 'NULL', 'INTEGER', null);
    await expectBoth('noise', "'abc'", 'VARCHAR', null);
  });

  it('date_shift: whole days within ±max_days, never 0, deterministic, type kept', async () => {
    const a = await mask('date_shift', "'2024-01-05'", 'DATE');
    const b = await mask('date_shift', "'2024-01-05'", 'DATE');
    assert.equal(a.type, 'DATE');
    assert.equal(a.sql, b.sql);
    assert.equal(a.sql, a.js);
    const days = (Date.parse(String(a.sql)) - Date.parse('2024-01-05')) / 86400000;
    assert.ok(Number.isInteger(days) && days !== 0 && Math.abs(days) <= 30, String(days));
    const narrow = await mask('date_shift', "'2024-01-05'", 'DATE', { max_days: 1 });
    assert.ok(['2024-01-04', '2024-01-06'].includes(String(narrow.sql)), String(narrow.sql));
    const ts = await mask('date_shift', "'2024-01-05 10:11:12'", 'TIMESTAMP', { seed_key: 'k' });
    assert.match(String(ts.sql), /^\d{4}-\d{2}-\d{2} 10:11:12$/);
    assert.equal(ts.sql, ts.js);
    const text = await mask('date_shift', "'2024-03-01'", 'VARCHAR');
    assert.match(String(text.sql), /^\d{4}-\d{2}-\d{2}$/);
    assert.notEqual(text.sql, '2024-03-01');
    await expectBoth('date_shift', 'NULL', 'DATE', null);
    await expectBoth('date_shift', '42', 'INTEGER', null);
  });

  it('consistent_hash: join-safe prefix + keyed hash (HMAC-SHA256 under the project key, not a plain SHA-256)', async () => {
    const hmac = (v: string) => catalog.keys.hmacHex('consistent_hash', '', v);
    await expectBoth('consistent_hash', "'ada'", 'VARCHAR', hmac('ada').slice(0, 8));
    await expectBoth('consistent_hash', "'ada'", 'VARCHAR', 'cust_' + hmac('ada').slice(0, 12), { prefix: 'cust_', length: 12 });
    await expectBoth('consistent_hash', 'NULL', 'VARCHAR', null, { prefix: 'p' });
    await expectBoth('consistent_hash', '7', 'INTEGER', hmac('7').slice(0, 8));
    assert.notEqual(hmac('ada').slice(0, 8), sha('ada').slice(0, 8));
    // The HMAC in SQL is RFC 2104 HMAC-SHA256 (node's crypto.createHmac is the reference).
    const other = new MethodCatalog();
    assert.notEqual(other.keys.hmacHex('consistent_hash', '', 'ada'), hmac('ada'), 'another project key gives other pseudonyms');
  });

  it('validates method_config and names the field', () => {
    assert.throws(() => catalog.normalizeConfig('partial', { show_first: -1 }), (e: any) => e.status === 400 && e.details.field === 'method_config.show_first');
    assert.throws(() => catalog.normalizeConfig('phone', { bogus: 1 }), (e: any) => e.status === 400 && e.details.field === 'method_config.bogus');
    assert.throws(() => catalog.normalizeConfig('range', { bucket_size: 'wide' }), (e: any) => e.details.field === 'method_config.bucket_size');
    assert.throws(() => catalog.normalizeConfig('nope', {}), (e: any) => e.status === 400 && e.details.field === 'method');
    assert.deepEqual(catalog.normalizeConfig('noise', {}), { percentage: 10, seed_key: '' });
  });
});
