/**
 * Issue 15: the nine types as contributions to CONNECTOR_TYPES: identifiers, parameter schemas
 * (compiled the way the connectors plugin compiles them), secret parameters marked, CDC modes,
 * and generated scripts that name every secret only as its .env variable.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { CLOUD_CONNECTOR_TYPES } from '../../../plugins/connectors-cloud/types.js';

const SECRETS: Record<string, string[]> = {
  spreadsheet: ['token'],
  object_storage: ['secret_access_key', 'session_token'],
  rest_api: ['token'],
  payments: ['api_key'],
  ecommerce: ['api_key'],
  crm: ['api_key'],
  cloud_warehouse_a: ['token'],
  cloud_warehouse_b: ['api_key'],
  cloud_warehouse_c: ['password'],
};

const SAMPLE: Record<string, Record<string, unknown>> = {
  spreadsheet: { url: 'https://sheets.example.com/export?format=csv', token: 'SEKRET-sheet' },
  object_storage: { bucket: 'lake', access_key_id: 'AKIAEXAMPLE', secret_access_key: 'SEKRET-s3', session_token: 'SEKRET-session' },
  rest_api: { url: 'https://api.example.com', token: 'SEKRET-rest', resources: [{ name: 'orders', path: '/orders' }] },
  payments: { api_key: 'SEKRET-pay' },
  ecommerce: { url: 'https://shop.example.com', api_key: 'SEKRET-shop' },
  crm: { api_key: 'SEKRET-crm' },
  cloud_warehouse_a: { url: 'https://acct.example.com', token: 'SEKRET-wa', database: 'PROD' },
  cloud_warehouse_b: { url: 'https://ws.example.com', api_key: 'SEKRET-wb', catalog: 'main' },
  cloud_warehouse_c: { host: 'wh.example.com', database: 'dev', user: 'etl', password: 'SEKRET-wc' },
};

describe('connectors-cloud contract', () => {
  it('contributes the nine types with distinct lower-case identifiers', () => {
    assert.deepEqual(
      CLOUD_CONNECTOR_TYPES.map((t) => t.type),
      ['spreadsheet', 'object_storage', 'rest_api', 'payments', 'ecommerce', 'crm', 'cloud_warehouse_a', 'cloud_warehouse_b', 'cloud_warehouse_c'],
    );
    for (const t of CLOUD_CONNECTOR_TYPES) {
      assert.match(t.type, /^[a-z][a-z0-9_]*$/);
      assert.ok(t.label && t.description, t.type);
    }
  });

  it('params: valid schemas (as the connectors plugin compiles them), secrets marked, sample configs accepted, wrong ones refused', () => {
    const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false });
    for (const t of CLOUD_CONNECTOR_TYPES) {
      const validate = ajv.compile({ type: 'object', ...t.params });
      const props = (t.params as { properties: Record<string, Record<string, unknown>> }).properties;
      assert.deepEqual(Object.keys(props).filter((k) => props[k]!['x-secret'] === true), SECRETS[t.type], t.type);
      const sample = structuredClone(SAMPLE[t.type]!);
      assert.ok(validate(sample), `${t.type}: ${JSON.stringify(validate.errors)}`);
      assert.ok(!validate({ ...SAMPLE[t.type], not_a_param: 1 }), `${t.type} refuses an unknown parameter`);
      assert.ok(!validate({ ...SAMPLE[t.type], timeout_ms: 'soon' }), `${t.type} refuses a wrong-typed parameter`);
    }
  });

  it('CDC modes per type', () => {
    assert.deepEqual(Object.fromEntries(CLOUD_CONNECTOR_TYPES.map((t) => [t.type, t.cdcModes])), {
      spreadsheet: ['full_refresh', 'file_tracking'],
      object_storage: ['full_refresh', 'file_tracking', 'high_watermark'],
      rest_api: ['full_refresh', 'high_watermark'],
      payments: ['full_refresh', 'high_watermark'],
      ecommerce: ['full_refresh', 'high_watermark'],
      crm: ['full_refresh', 'high_watermark'],
      cloud_warehouse_a: ['full_refresh', 'high_watermark'],
      cloud_warehouse_b: ['full_refresh'],
      cloud_warehouse_c: ['full_refresh', 'high_watermark'],
    });
  });

  it('generated scripts sync through ctx.connectors and hold no secret value', () => {
    for (const t of CLOUD_CONNECTOR_TYPES) {
      const name = `my_${t.type}`;
      const script = t.generateScript({ name, type: t.type, config: SAMPLE[t.type]! }, ['orders', 'customers'], 'landing');
      assert.ok(!/SEKRET/.test(script), `${t.type}: a secret value in the script`);
      assert.match(script, new RegExp(`ctx\\.connectors\\.sync\\(${JSON.stringify(name)}`));
      assert.match(script, /export default async/);
      assert.match(script, /INSERT INTO landing\.orders/);
      assert.match(script, /INSERT INTO landing\.customers/);
    }
  });
});
