/**
 * The streams page in headless Chromium against a real dp server on a copy of examples/shop
 * (plus a slow stream to cancel): start a stream and follow its steps and models live, cancel
 * one, the history with its durations chart and each run opened to its steps, and the scheduler
 * with next runs; a script run opened to its output, a failed stream's failed steps re-run, and
 * an assertion failure's details on the Quality page as tables.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { SHOP_EXAMPLE } from '../helpers.js';
import { onPage, screenshot, shopForTests, UI_SUITE_TIMEOUT_MS } from './browser.js';

const SHOP_YML = fs.readFileSync(path.join(SHOP_EXAMPLE, 'project.yml'), 'utf8');

describe('streams page', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  // Not built beforehand: the stream's seed and transform steps build every model.
  const server = shopForTests({
    build: false,
    files: {
      'ingest/slow.ts': 'export default async (ctx: any) => { while (!ctx.signal.aborted) await new Promise((r) => setTimeout(r, 50)); };\n',
      'ingest/greet.ts': "export default async (ctx: any) => { console.log('hello from greet'); ctx.log.info('greeted'); };\n",
      // Fails the first time it runs, succeeds after (its attempts are counted in the database).
      'ingest/flaky.ts': [
        'export default async (ctx: any) => {',
        "  await ctx.db.run('CREATE TABLE IF NOT EXISTS main.flaky_attempts (n INTEGER)');",
        "  await ctx.db.run('INSERT INTO main.flaky_attempts VALUES (1)');",
        "  const n = Number(await ctx.db.value('SELECT count(*) FROM main.flaky_attempts'));",
        "  if (n === 1) throw new Error('the first attempt fails');",
        '  console.log(`flaky ran on attempt ${n}`);',
        '};',
        '',
      ].join('\n'),
      'ingest/after.ts': "export default async () => { console.log('after ran'); };\n",
      'project.yml': SHOP_YML.replace(
        /^streams:\n/m,
        'streams:\n  slow:\n    description: Waits until cancelled\n    steps:\n      - ingest: [slow]\n      - seed: [all]\n' +
          '  flaky:\n    description: Its second step fails the first time\n    steps:\n      - ingest: [greet]\n      - ingest: [flaky]\n      - ingest: [after]\n',
      ),
    },
  });

  it('starts a stream and shows each step and model live, then its history with a chart and the scheduler', async () => {
    await onPage(server, '/streams', async (page) => {
      await page.getByRole('button', { name: 'Run daily' }).click();
      const live = page.getByRole('region', { name: 'Live run' });
      await live.getByRole('cell', { name: 'marts.customer_orders' }).waitFor();
      await live.getByRole('heading', { name: /daily/ }).getByText('success').waitFor({ timeout: 60_000 });
      // Each step's row shows its end (the heading's may render first).
      for (const step of [/ingest \[events\]/, /transform \[all\]/]) await live.getByRole('row').filter({ hasText: step }).filter({ hasText: 'success' }).first().waitFor();
      const steps = await live.getByRole('row').allInnerTexts();
      assert.ok(steps.some((r) => /ingest \[events\]\s+success/.test(r)), steps.join('\n'));
      assert.ok(steps.some((r) => /transform \[all\]\s+success/.test(r)), steps.join('\n'));
      await live.getByRole('row', { name: /marts\.customer_orders/ }).filter({ hasText: 'built' }).waitFor();
      const model = await live.getByRole('row', { name: /marts\.customer_orders/ }).innerText();
      assert.match(model, /built\s+\d+/);
      await screenshot(page, 'streams-live');

      await page.getByRole('tab', { name: 'History' }).click();
      await page.getByTestId('line-chart').waitFor();
      await page.getByRole('cell', { name: 'daily', exact: true }).first().click();
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

  it('opens a script run to its output and re-runs the failed steps of a failed stream run', async () => {
    const script = await fetch(`${server.url}/api/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ script_path: 'ingest/greet.ts' }) });
    assert.equal((await script.json()).status, 'success');
    const failed = await (await fetch(`${server.url}/api/stream/flaky`, { method: 'POST' })).json();
    assert.equal(failed.status, 'error', JSON.stringify(failed));

    await onPage(server, '/streams/history', async (page) => {
      // The script run started through POST /api/run (trigger api), not the one the stream ran.
      const cell = (name: string) => page.getByRole('cell', { name, exact: true });
      await page.getByRole('row').filter({ has: cell('ingest/greet.ts') }).filter({ has: cell('api') }).click();
      const output = page.getByRole('region', { name: 'Run of ingest/greet.ts' }).getByLabel('Output of ingest/greet.ts');
      await output.waitFor();
      assert.deepEqual((await output.innerText()).split('\n'), ['hello from greet', 'greeted']);

      await page.getByRole('row').filter({ has: cell('flaky') }).click();
      const opened = page.getByRole('region', { name: 'Steps of flaky' });
      await opened.getByRole('row', { name: /^1\s+ingest\s+flaky\s+error/ }).waitFor();
      await opened.getByRole('button', { name: 'Re-run failed steps' }).click();
      await opened.getByRole('status').getByText(/^Started run stream_/).waitFor();
      await page.getByRole('row').filter({ has: cell(`rerun:${failed.run_id}`) }).getByText('success').waitFor();
      await screenshot(page, 'streams-rerun-failed');
    });

    // The new run ran the failed step and the one after it, not the step that had succeeded.
    const runs = (await (await fetch(`${server.url}/api/history?kind=stream&name=flaky`)).json()).runs;
    const rerun = runs.find((r: { trigger: string }) => r.trigger === `rerun:${failed.run_id}`);
    assert.deepEqual(
      rerun.steps.map((s: { index: number; status: string }) => [s.index, s.status]),
      [
        [1, 'success'],
        [2, 'success'],
      ],
    );
    const greets = (await (await fetch(`${server.url}/api/history?name=ingest/greet.ts`)).json()).runs;
    assert.equal(greets.length, 2, 'greet ran once by itself and once in the first stream run');
    const detail = await (await fetch(`${server.url}/api/history/${runs.find((r: { kind: string; trigger: string }) => r.trigger === `rerun:${failed.run_id}`).run_id}`)).json();
    assert.equal(detail.status, 'success');
    const again = await fetch(`${server.url}/api/history/${detail.run_id}/rerun-failed`, { method: 'POST' });
    assert.equal(again.status, 400);
    assert.equal((await again.json()).error.code, 'nothing_to_rerun');
    const missing = await fetch(`${server.url}/api/history/stream_nope`);
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'run_not_found');
  });

  it("shows an assertion failure's details on the Quality page as tables, not JSON or NULL", async () => {
    fs.writeFileSync(
      path.join(server.root, 'transform', 'marts', 'with_gap.sql'),
      "-- @config materialized=table, schema=marts\n-- @assert no_nulls(note)\nSELECT 1 AS id, 'ok' AS note UNION ALL SELECT 2, NULL\n",
    );
    const built = await fetch(`${server.url}/api/transform`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ targets: ['marts.with_gap'] }) });
    assert.equal(built.status, 200, await built.clone().text());
    await onPage(server, '/quality', async (page) => {
      await page.getByRole('tab', { name: 'Assertions' }).click();
      const detail = page.getByRole('table', { name: 'Detail of no_nulls(note)' }).first();
      await detail.waitFor();
      assert.match(await detail.getByRole('row', { name: /null count/ }).innerText(), /null count\s+1/);
      // The offending row is a nested table; its NULL shows as "none".
      const sample = await detail.getByRole('row', { name: /sample rows/ }).innerText();
      assert.match(sample, /id\s+note/);
      assert.match(sample, /2\s+none/);
      const text = await detail.innerText();
      assert.doesNotMatch(text, /NULL|null,|[{}[\]"]/);
      await screenshot(page, 'quality-assertion-detail');
    });
  });
});
