/**
 * Issue 15: rest_api and the SaaS presets (payments, ecommerce, crm) against a local fake API:
 * every pagination style, records at a JSON path, bearer and header auth, incremental reads,
 * bounded batches, clear causes for refused, DNS, auth and timeouts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { restApiType } from '../../../plugins/connectors-cloud/rest-api.js';
import { crmType, ecommerceType, paymentsType } from '../../../plugins/connectors-cloud/saas.js';
import { startFakeSaas, type FakeSaas } from './fakes/saas.js';
import { freePort, readAll } from './support/read.js';

const orders = (from: number, n: number, day = 1) =>
  Array.from({ length: n }, (_, i) => ({
    id: from + i,
    customer: `c${(from + i) % 7}`,
    amount: from + i + 0.5,
    paid: (from + i) % 2 === 0,
    updated_at: `2024-01-${String(day).padStart(2, '0')}T10:00:${String(i % 60).padStart(2, '0')}Z`,
    meta: { tags: ['a', 'b'] },
  }));

describe('rest_api', () => {
  let api: FakeSaas;
  let config: Record<string, unknown>;
  before(async () => {
    api = await startFakeSaas();
    api.data.set('orders', orders(1, 95));
    api.data.set('people', Array.from({ length: 23 }, (_, i) => ({ id: `p${i}`, name: `Person ${i}` })));
    config = {
      url: api.url,
      auth: 'bearer',
      token: api.token,
      resources: [
        { name: 'orders', path: '/api/paged/orders', records_path: 'data.items', pagination: { style: 'page', size_param: 'per_page', page_size: 10 }, incremental_param: 'updated_since', cursor_field: 'updated_at' },
        { name: 'people', path: '/api/cursor/people', records_path: 'results', pagination: { style: 'cursor', cursor_param: 'cursor', next_cursor_path: 'meta.next_cursor', size_param: 'limit', page_size: 5 } },
        { name: 'people_linked', path: '/api/linked/people', records_path: 'records', pagination: { style: 'link', size_param: 'limit', page_size: 4 } },
        { name: 'people_offset', path: '/api/offset/people', pagination: { style: 'offset', size_param: 'limit', page_size: 6 } },
      ],
    };
  });
  after(async () => api.close());

  it('tests the connection and names the host', async () => {
    const r = await restApiType.testConnection(config, AbortSignal.timeout(10_000));
    assert.deepEqual(r, { ok: true, message: `connected to ${new URL(api.url).host}` });
  });

  it('discovers each resource with columns typed for DuckDB', async () => {
    const tables = await restApiType.discover(config, AbortSignal.timeout(10_000));
    assert.deepEqual(tables.map((t) => t.name), ['orders', 'people', 'people_linked', 'people_offset']);
    assert.deepEqual(tables[0]!.columns, [
      { name: 'id', type: 'BIGINT' },
      { name: 'customer', type: 'VARCHAR' },
      { name: 'amount', type: 'DOUBLE' },
      { name: 'paid', type: 'BOOLEAN' },
      { name: 'updated_at', type: 'TIMESTAMPTZ' },
      { name: 'meta', type: 'JSON' },
    ]);
  });

  it('reads every page of every pagination style in bounded batches', async () => {
    const paged = await readAll(restApiType, config, { table: 'orders', batchRows: 7 });
    assert.equal(paged.rows.length, 95);
    assert.deepEqual(paged.objects.map((o) => o.id), Array.from({ length: 95 }, (_, i) => i + 1));
    assert.equal(paged.objects[0]!.meta, '{"tags":["a","b"]}');
    for (const table of ['people', 'people_linked', 'people_offset']) {
      const r = await readAll(restApiType, config, { table, batchRows: 3 });
      assert.deepEqual(r.objects.map((o) => o.id), Array.from({ length: 23 }, (_, i) => `p${i}`), table);
    }
    const pageRequests = api.requests.filter((q) => q.path === '/api/paged/orders' && q.query.per_page === '10');
    assert.ok(pageRequests.some((q) => q.query.page === '10'), 'asked for page 10');
    assert.ok(!pageRequests.some((q) => q.query.page === '11'), 'stopped at the short page');
  });

  it('reads only the requested columns, in their order', async () => {
    const r = await readAll(restApiType, config, { table: 'orders', columns: ['updated_at', 'id'] });
    assert.deepEqual(r.columns.map((c) => c.name), ['updated_at', 'id']);
    assert.deepEqual(r.rows[0], ['2024-01-01T10:00:00Z', 1]);
  });

  it('incremental: sends the watermark and keeps only records past it (the API is inclusive)', async () => {
    const first = await readAll(restApiType, config, { table: 'orders', cursor: { column: 'updated_at', after: null } });
    assert.equal(first.rows.length, 95);
    api.data.get('orders')!.push(...orders(96, 5, 2));
    const before = api.requests.length;
    const second = await readAll(restApiType, config, { table: 'orders', cursor: { column: 'updated_at', after: '2024-01-01T10:00:59Z' } });
    assert.deepEqual(second.objects.map((o) => o.id), [96, 97, 98, 99, 100]);
    assert.equal(api.requests[before]!.query.updated_since, '2024-01-01T10:00:59Z');
  });

  it('sends the token only to the configured host: a Link to another host is refused', async () => {
    const evil = { ...config, resources: [{ name: 'x', path: '/api/linked/people', records_path: 'records', params: { evil: 1 }, pagination: { style: 'link' } }] };
    await assert.rejects(readAll(restApiType, evil, { table: 'x' }), (e: any) => e.code === 'remote_response_invalid' && /another host/.test(e.message));
  });

  it('header auth sends the token in the named header', async () => {
    const keyed = { ...config, auth: 'header', auth_header: 'X-API-Key' };
    const r = await readAll(restApiType, keyed, { table: 'orders' });
    assert.ok(r.rows.length >= 95);
    assert.equal(api.requests.at(-1)!.headers['x-api-key'], api.token);
    assert.equal(api.requests.at(-1)!.headers.authorization, undefined);
  });

  it('answers clear causes: authentication failed, connection refused, host not found, timed out', async () => {
    const bad = await restApiType.testConnection({ ...config, token: 'wrong-token' }, AbortSignal.timeout(10_000));
    assert.equal(bad.ok, false);
    assert.match(bad.message, /authentication failed/);
    assert.ok(!bad.message.includes('wrong-token'));
    const port = await freePort();
    const refused = await restApiType.testConnection({ ...config, url: `http://127.0.0.1:${port}` }, AbortSignal.timeout(10_000));
    assert.deepEqual(refused, { ok: false, message: `127.0.0.1:${port}: connection refused` });
    const dns = await restApiType.testConnection({ ...config, url: 'http://no-such-host.invalid' }, AbortSignal.timeout(10_000));
    assert.deepEqual(dns, { ok: false, message: 'no-such-host.invalid: host not found' });
    const started = Date.now();
    const hang = await restApiType.testConnection({ ...config, timeout_ms: 300, resources: [{ name: 'h', path: '/api/hang' }] }, AbortSignal.timeout(10_000));
    assert.equal(hang.ok, false);
    assert.match(hang.message, /timed out after 300 ms/);
    assert.ok(Date.now() - started < 5000);
    await assert.rejects(readAll(restApiType, { ...config, timeout_ms: 300, resources: [{ name: 'h', path: '/api/hang' }] }, { table: 'h' }), (e: any) => e.code === 'remote_unreachable' && /timed out/.test(e.message));
  });

  it('rejects a non-JSON answer, an unknown resource and a missing token with their codes', async () => {
    await assert.rejects(readAll(restApiType, { ...config, resources: [{ name: 'n', path: '/api/notjson' }] }, { table: 'n' }), (e: any) => e.code === 'remote_response_invalid');
    await assert.rejects(readAll(restApiType, config, { table: 'nope' }), (e: any) => e.code === 'source_table_not_found' && e.status === 404);
    await assert.rejects(readAll(restApiType, { ...config, token: undefined }, { table: 'orders' }), (e: any) => e.code === 'connector_param_invalid' && e.details.field === 'token');
  });

  it('stops reading when the signal aborts', async () => {
    const controller = new AbortController();
    let batches = 0;
    await assert.rejects(
      (async () => {
        for await (const _ of restApiType.read(config, { table: 'orders', batchRows: 5, signal: controller.signal })) {
          batches++;
          controller.abort();
        }
      })(),
    );
    assert.equal(batches, 1);
  });
});

describe('payments, ecommerce, crm presets', () => {
  let api: FakeSaas;
  before(async () => {
    api = await startFakeSaas();
    api.data.set('payments.charges', Array.from({ length: 250 }, (_, i) => ({ id: `ch_${String(i).padStart(4, '0')}`, object: 'charge', amount: 100 + i, currency: 'eur', created: 1_700_000_000 + i })));
    api.data.set('payments.customers', [{ id: 'cus_1', email: 'a@example.com', created: 1_700_000_000 }]);
    api.data.set('ecommerce.orders', Array.from({ length: 120 }, (_, i) => ({ id: 5000 + i, name: `#${1000 + i}`, total_price: `${10 + i}.90`, updated_at: `2024-02-0${1 + (i % 3)}T08:00:00+01:00` })));
    api.data.set('crm.contacts', Array.from({ length: 42 }, (_, i) => ({ id: String(100 + i), properties: { email: `p${i}@example.com` }, updatedAt: `2024-03-01T00:00:${String(i).padStart(2, '0')}.000Z` })));
  });
  after(async () => api.close());

  it('payments: cursor pagination by starting_after, incremental by created[gt]', async () => {
    const config = { url: api.url, api_key: api.token, page_size: 40 };
    assert.equal((await paymentsType.testConnection(config, AbortSignal.timeout(10_000))).ok, true);
    const tables = await paymentsType.discover(config, AbortSignal.timeout(10_000));
    assert.deepEqual(tables.map((t) => t.name), ['customers', 'charges', 'invoices', 'refunds']);
    assert.deepEqual(tables[1]!.columns.map((c) => `${c.name} ${c.type}`), ['id VARCHAR', 'object VARCHAR', 'amount BIGINT', 'currency VARCHAR', 'created BIGINT']);
    const all = await readAll(paymentsType, config, { table: 'charges', batchRows: 25 });
    assert.equal(all.rows.length, 250);
    assert.equal(new Set(all.objects.map((o) => o.id)).size, 250);
    const inc = await readAll(paymentsType, config, { table: 'charges', cursor: { column: 'created', after: 1_700_000_245 } });
    // The API lists newest first; an incremental read comes in cursor order (the watermark is the last row's).
    assert.deepEqual(inc.objects.map((o) => o.id), ['ch_0246', 'ch_0247', 'ch_0248', 'ch_0249']);
    assert.equal(all.objects[0]!.id, 'ch_0249');
    const none = await readAll(paymentsType, config, { table: 'charges', cursor: { column: 'created', after: 1_700_000_249 } });
    assert.equal(none.rows.length, 0);
    assert.ok(none.columns.some((c) => c.name === 'created'), 'an empty incremental read still names the cursor column');
    assert.ok(api.requests.some((q) => q.query['created[gt]'] === '1700000245'));
    const denied = await paymentsType.testConnection({ ...config, api_key: 'sk_wrong' }, AbortSignal.timeout(10_000));
    assert.match(denied.message, /authentication failed \(Invalid API Key provided\)/);
  });

  it('ecommerce: Link-header pagination, the access-token header, prices as decimals', async () => {
    const config = { url: api.url, api_key: api.token, resources: ['orders'], page_size: 50 };
    const tables = await ecommerceType.discover(config, AbortSignal.timeout(10_000));
    assert.deepEqual(tables.map((t) => t.name), ['orders']);
    assert.deepEqual(tables[0]!.columns.find((c) => c.name === 'total_price'), { name: 'total_price', type: 'DECIMAL(18,2)' });
    const all = await readAll(ecommerceType, config, { table: 'orders' });
    assert.equal(all.rows.length, 120);
    assert.equal(api.requests.at(-1)!.headers['x-shopify-access-token'], api.token);
    const inc = await readAll(ecommerceType, config, { table: 'orders', cursor: { column: 'updated_at', after: '2024-02-02T08:00:00+01:00' } });
    assert.equal(inc.rows.length, 40);
    assert.ok(api.requests.some((q) => q.query.updated_at_min === '2024-02-02T08:00:00+01:00'));
    await assert.rejects(ecommerceType.discover({ ...config, resources: ['carts'] }, AbortSignal.timeout(10_000)), (e: any) => e.code === 'connector_param_invalid' && e.details.field === 'resources');
  });

  it('crm: cursor pagination by paging.next.after, nested properties as JSON', async () => {
    const config = { url: api.url, api_key: api.token, resources: ['contacts'] };
    const all = await readAll(crmType, config, { table: 'contacts', batchRows: 10 });
    assert.equal(all.rows.length, 42);
    assert.equal(all.columns.find((c) => c.name === 'properties')!.type, 'JSON');
    assert.equal(all.objects[41]!.properties, '{"email":"p41@example.com"}');
    const inc = await readAll(crmType, config, { table: 'contacts', cursor: { column: 'updatedAt', after: '2024-03-01T00:00:39.000Z' } });
    assert.deepEqual(inc.objects.map((o) => o.id), ['140', '141']);
  });
});
