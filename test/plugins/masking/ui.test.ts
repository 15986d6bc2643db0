/**
 * The masking page's derived tab in headless Chromium (issue 19): a policy on a seed column of
 * examples/shop shows the staging and mart columns masked through lineage, with their source.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { onPage, screenshot, shopForTests, UI_SUITE_TIMEOUT_MS } from '../../ui/browser.js';

describe('masking page: derived through lineage', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests();

  it('lists each derived column with its method and masked source', async () => {
    const res = await fetch(`${server.url}/api/masking/policies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ schema_name: 'seeds', table_name: 'customers', column_name: 'last_name', method: 'partial' }),
    });
    assert.equal(res.status, 201, await res.text());
    await onPage(server, '/masking', async (page) => {
      await page.getByRole('tab', { name: 'Derived through lineage' }).click();
      const row = page.getByRole('row').filter({ hasText: 'marts.customer_orders.full_name' });
      await row.waitFor();
      assert.match(await row.innerText(), /redact[\s\S]*seeds\.customers\.last_name/);
      await page.getByRole('row').filter({ hasText: 'staging.stg_customers.full_name' }).waitFor();
      await screenshot(page, 'masking-derived');
    });
  });
});
