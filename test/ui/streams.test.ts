/**
 * The streams page in headless Chromium against a real `dp serve` on a copy of examples/shop
 * (plus a slow stream to cancel): start a stream and follow its steps and models live, cancel
 * one, the history with its durations chart and each run opened to its steps, and the scheduler
 * with next runs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { SHOP_EXAMPLE } from '../helpers.js';
import { onPage, screenshot, shopForTests } from './browser.js';

const SHOP_YML = fs.readFileSync(path.join(SHOP_EXAMPLE, 'project.yml'), 'utf8');

describe('streams page', { timeout: 240_000 }, () => {
  // Not built beforehand: the stream's seed and transform steps build every model.
  const server = shopForTests({
    build: false,
    files: {
      'ingest/slow.ts': 'export default async (ctx: any) => { while (!ctx.signal.aborted) await new Promise((r) => setTimeout(r, 50)); };\n',
      'project.yml': SHOP_YML.replace(/^streams:\n/m, 'streams:\n  slow:\n    description: Waits until cancelled\n    steps:\n      - ingest: [slow]\n      - seed: [all]\n'),
    },
  });

  it('starts a stream and shows each step and model live, then its history with a chart and the scheduler', async () => {
    await onPage(server, '/streams', async (page) => {
      await page.getByRole('button', { name: 'Run daily' }).click();
      const live = page.getByRole('region', { name: 'Live run' });
      await live.getByRole('cell', { name: 'marts.customer_orders' }).waitFor();
      await live.getByRole('heading', { name: /daily/ }).getByText('success').waitFor({ timeout: 60_000 });
      const steps = await live.getByRole('row').allInnerTexts();
      assert.ok(steps.some((r) => /ingest \[events\]\s+success/.test(r)), steps.join('\n'));
      assert.ok(steps.some((r) => /transform \[all\]\s+success/.test(r)), steps.join('\n'));
      const model = await live.getByRole('row', { name: /marts\.customer_orders/ }).innerText();
      assert.match(model, /built\s+\d+/);
      await screenshot(page, 'streams-live');

      await page.getByRole('tab', { name: 'History' }).click();
      await page.getByTestId('line-chart').waitFor();
      await page.getByRole('cell', { name: 'daily' }).first().click();
      // A run opens to its steps: a table with each step's action, status and time.
      const opened = page.getByRole('region', { name: 'Steps of daily' });
      await opened.getByRole('row', { name: /^2\s+transform\s+all\s+success/ }).first().waitFor();
      await opened.getByRole('columnheader', { name: 'duration ms' }).first().waitFor();
      await screenshot(page, 'streams-history');

      await page.getByRole('tab', { name: 'Scheduler' }).click();
      await page.getByRole('cell', { name: 'stream:daily' }).waitFor();
      const row = await page.getByRole('row', { name: /stream:daily/ }).innerText();
      assert.match(row, /0 6 \* \* \*/);
    });
  });

  it('cancels a running stream from the page', async () => {
    await onPage(server, '/streams', async (page) => {
      await page.getByRole('button', { name: 'Run slow' }).click();
      await page.getByRole('button', { name: 'Cancel slow' }).click();
      await page.getByRole('region', { name: 'Live run' }).getByRole('heading', { name: /slow/ }).getByText('cancelled').waitFor();
      const r = await fetch(`${server.url}/api/history?name=slow&limit=1`);
      assert.equal((await r.json()).runs[0].status, 'cancelled');
    });
  });
});
