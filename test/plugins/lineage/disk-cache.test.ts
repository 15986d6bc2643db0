import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject, startServer } from '../../helpers.js';

const CACHE = '.dp/lineage-cache.json';

describe('lineage kept across processes (.dp/lineage-cache.json)', () => {
  it('a new server answers unchanged models from the file, recomputes a changed one, and ignores a file of another format', async () => {
    const root = makeProject({
      'seeds/orders.csv': 'order_id,customer_id,amount\n1,1,10\n',
      'transform/staging/stg_orders.sql': '-- @config materialized=view\nSELECT order_id, customer_id, amount FROM seeds.orders\n',
      'transform/marts/revenue.sql': '-- @config materialized=view\nSELECT customer_id, sum(amount) AS revenue FROM staging.stg_orders GROUP BY ALL\n',
    });
    let s = await startServer(root);
    const first = await s.request('GET', '/api/lineage');
    assert.equal(first.status, 200);
    await s.close();
    const file = path.join(root, CACHE);
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.deepEqual(Object.keys(doc.entries).sort(), ['marts.revenue', 'staging.stg_orders']);

    // A marker only the file holds: the next process must take the entry from it, not recompute it.
    doc.entries['marts.revenue'].result.columns.revenue = [{ source_table: 'staging.stg_orders', source_column: 'from_the_file' }];
    fs.writeFileSync(file, JSON.stringify(doc));
    s = await startServer(root);
    try {
      const again = await s.request('GET', '/api/lineage');
      const revenue = again.body.find((l: { model: string }) => l.model === 'marts.revenue');
      assert.deepEqual(revenue.columns.revenue, [{ source_table: 'staging.stg_orders', source_column: 'from_the_file' }]);

      // A changed model is analysed again, and so is what reads it (its upstream columns changed).
      fs.writeFileSync(path.join(root, 'transform/staging/stg_orders.sql'), '-- @config materialized=view\nSELECT order_id, customer_id, amount, order_id AS extra FROM seeds.orders\n');
      const changed = await s.request('GET', '/api/lineage');
      const stg = changed.body.find((l: { model: string }) => l.model === 'staging.stg_orders');
      assert.deepEqual(Object.keys(stg.columns), ['order_id', 'customer_id', 'amount', 'extra']);
      const downstream = changed.body.find((l: { model: string }) => l.model === 'marts.revenue');
      assert.deepEqual(downstream.columns.revenue, [{ source_table: 'staging.stg_orders', source_column: 'amount' }]);
    } finally {
      await s.close();
    }

    // Another format (or DuckDB version) is not read.
    const written = JSON.parse(fs.readFileSync(file, 'utf8'));
    written.format = -1;
    written.entries['marts.revenue'].result.columns.revenue = [{ source_table: 'x', source_column: 'stale' }];
    fs.writeFileSync(file, JSON.stringify(written));
    s = await startServer(root);
    try {
      const fresh = await s.request('GET', '/api/lineage');
      const revenue = fresh.body.find((l: { model: string }) => l.model === 'marts.revenue');
      assert.deepEqual(revenue.columns.revenue, [{ source_table: 'staging.stg_orders', source_column: 'amount' }]);
    } finally {
      await s.close();
    }
  });
});
