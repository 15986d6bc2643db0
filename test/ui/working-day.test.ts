/**
 * Model pages, runs that open and the masking preview, in headless Chromium against a real
 * dp server of examples/shop (issue 32 items 2, 4 and 8): the model page shows what the model
 * is and how its last build went beside the code, previews the editor's unsaved SQL, runs its
 * assertions and unit tests; a model restored from a version is marked and rebuilt with
 * "force"; a transform run opens to its steps and re-runs the failed ones; "Preview as a role"
 * says which columns that role reads masked, derived policies included.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { onPage, openPage, screenshot, shopForTests, UI_SUITE_TIMEOUT_MS } from './browser.js';

describe('model pages, runs and masking preview (shop)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests();

  const api = async (method: string, urlPath: string, body?: unknown) => {
    const r = await fetch(`${server.url}${urlPath}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as any };
  };

  it('shows description, typed columns, the last build, freshness and assertions beside the code; runs assertions and unit tests', async () => {
    await onPage(server, '/models/m/marts.customer_orders', async (page) => {
      const details = page.getByTestId('model-details');
      await details.getByTestId('model-description').getByText(/One row per customer/).waitFor();
      await details.getByRole('cell', { name: 'lifetime_value', exact: true }).waitFor();
      assert.match(await details.getByRole('row', { name: /lifetime_value/ }).innerText(), /DECIMAL|DOUBLE|HUGEINT|BIGINT/);
      await details.getByTestId('last-build').getByText(/built/).waitFor();
      assert.match(await details.getByTestId('last-build').innerText(), /\d+ rows · \d+ ms/);
      await details.getByTestId('freshness').getByText('fresh').waitFor();
      await details.getByRole('cell', { name: 'unique(customer_id)' }).waitFor();

      await details.getByRole('button', { name: 'Run assertions' }).click();
      const checks = details.getByTestId('checks-result');
      await checks.getByTestId('checks-summary').filter({ hasText: /Assertions: 2\/2 passed/ }).waitFor();
      await details.getByRole('button', { name: 'Run unit tests' }).click();
      await checks.getByTestId('checks-summary').filter({ hasText: /Unit tests: \d+\/\d+ passed/ }).waitFor();
      await screenshot(page, 'model-page-details');
    });
  });

  it("previews the editor's unsaved SQL with a limit: rows, columns and the compiled SQL", async () => {
    await onPage(server, '/models/m/staging.stg_payments', async (page) => {
      const preview = page.getByTestId('model-preview');
      await preview.getByRole('button', { name: 'Preview' }).click();
      await preview.getByTestId('preview-status').getByText(/^\d+ rows.* · \d+ columns/).waitFor();
      await page.locator('.cm-content').first().click();
      await page.keyboard.press('Control+End');
      await page.keyboard.insertText('\nLIMIT 2');
      await preview.getByLabel('Preview row limit').fill('1');
      await preview.getByRole('button', { name: 'Preview' }).click();
      await preview.getByTestId('preview-status').getByText(/^1 rows \(more not shown\)/).waitFor();
      await preview.getByText('Compiled SQL').click();
      assert.match(await preview.getByTestId('compiled-sql').innerText(), /LIMIT 2$/);
      // Not saved: the file on disk is as before.
      assert.doesNotMatch(fs.readFileSync(path.join(server.root, 'transform', 'staging', 'stg_payments.sql'), 'utf8'), /LIMIT 2/);
    });
  });

  it('marks a model restored from a version as out of sync with its SQL, and rebuilds it with force', async () => {
    const version = (await api('POST', '/api/versions', { description: 'before restore' })).body;
    assert.ok(version.version_id, JSON.stringify(version));
    const restored = await api('POST', `/api/versions/${version.version_id}/restore`, { tables: ['marts.revenue_by_month'] });
    assert.equal(restored.status, 200, JSON.stringify(restored.body));
    await onPage(server, '/models/m/marts.revenue_by_month', async (page) => {
      const mark = page.getByTestId('needs-rebuild');
      await mark.getByText('Table out of sync with its SQL').waitFor();
      await mark.getByRole('button', { name: 'Rebuild (force)' }).click();
      await page.getByTestId('result-panel').getByRole('cell', { name: 'built', exact: true }).waitFor();
      await mark.waitFor({ state: 'detached' });
    });
  });

  it('opens a transform run to its steps with timing and logs, and re-runs the failed steps', async () => {
    const broken = path.join(server.root, 'transform', 'marts', 'ui_broken.sql');
    fs.writeFileSync(broken, "-- @config materialized=table, schema=marts\nSELECT error('boom from the model') AS x\n");
    const run = (await api('POST', '/api/transform', {})).body;
    assert.equal(run.status, 'error');
    await onPage(server, '/models/runs', async (page) => {
      await page.getByRole('cell', { name: run.run_id }).click();
      const detail = page.getByTestId('run-detail');
      const step = detail.getByRole('row', { name: /marts\.ui_broken/ });
      await step.getByText(/boom from the model/).waitFor();
      await detail.getByRole('row', { name: /staging\.stg_orders/ }).waitFor();
      fs.writeFileSync(broken, '-- @config materialized=table, schema=marts\nSELECT 1 AS x\n');
      await detail.getByRole('button', { name: 'Re-run failed steps' }).click();
      const panel = page.getByTestId('result-panel');
      await panel.getByRole('row', { name: /marts\.ui_broken/ }).getByText('built').waitFor();
      // The new run has nothing left to re-run, and the button says why.
      const runs = (await api('GET', '/api/transform/runs?limit=1')).body;
      await page.getByRole('cell', { name: runs[0].run_id }).click();
      const again = page.getByTestId('run-detail').getByRole('button', { name: 'Re-run failed steps' });
      await page.getByTestId('run-detail').getByRole('row', { name: /marts\.ui_broken/ }).waitFor();
      assert.equal(await again.isDisabled(), true);
      assert.equal(await again.getAttribute('title'), 'No step of this run failed');
      await screenshot(page, 'model-run-detail');
    });
    fs.rmSync(broken);
  });

  it('previews a table as a role with the columns that role reads masked, derived policies included', async () => {
    const created = await api('POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'customers', column_name: 'phone', method: 'partial', method_config: { show_last: 2 } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await onPage(server, '/masking', async (page) => {
      await page.getByRole('tab', { name: 'Preview as a role' }).click();
      await page.getByLabel('Table to preview').selectOption('staging.stg_customers');
      await page.getByLabel('Role to preview as').selectOption('viewer');
      await page.getByRole('button', { name: 'Preview', exact: true }).click();
      await page.getByText('masked for viewer: phone').waitFor();
      assert.equal(await page.getByText(/nothing masked/).count(), 0);
      await page.getByRole('cell', { name: /derived through lineage/ }).first().waitFor();
      await page.getByRole('cell', { name: 'partial', exact: true }).waitFor();
    });
  });

  it('creates a notebook, renders its markdown, runs all and from a cell with a counter, and a collaborator sees the outputs', async () => {
    const a = await openPage(server, '/notebooks');
    let b: Awaited<ReturnType<typeof openPage>> | null = null;
    try {
      await a.page.getByRole('button', { name: '+ New notebook' }).click();
      await a.page.getByLabel('Notebook name').fill('day_one');
      await a.page.getByRole('dialog').getByRole('button', { name: 'Create' }).click();
      await a.page.waitForURL(/\/notebooks\/notebooks\/day_one\.dpnb$/);
      await a.page.getByTestId('rendered-markdown').getByRole('heading', { name: 'day_one' }).waitFor();
      assert.ok(fs.existsSync(path.join(server.root, 'notebooks', 'day_one.dpnb')));

      b = await openPage(server, '/notebooks/notebooks/day_one.dpnb');
      await b.page.getByTestId('notebook-editors').getByText(/also here/).waitFor();
      await a.page.getByRole('button', { name: 'Run all' }).click();
      const cellA = a.page.getByTestId('notebook-cell').nth(1);
      await cellA.getByTestId('cell-output').getByText(/^1 row/).waitFor();
      await cellA.getByTestId('cell-execution-count').getByText('[1]').waitFor();
      await a.page.getByTestId('execution-count').getByText('runs: 1').waitFor();
      // B did not run anything and sees A's output, counted, with who ran it.
      const cellB = b.page.getByTestId('notebook-cell').nth(1);
      await cellB.getByTestId('cell-output').getByText(/^1 row/).waitFor();
      await cellB.getByTestId('cell-execution-count').getByText(/^\[1\]/).waitFor();

      await a.page.getByTestId('notebook-cell').nth(1).getByRole('button', { name: 'Run from here' }).click();
      await cellA.getByTestId('cell-execution-count').getByText('[2]').waitFor();
      await cellB.getByTestId('cell-execution-count').getByText(/^\[2\]/).waitFor();
      await b.page.getByTestId('execution-count').getByText('runs: 2').waitFor();
      await screenshot(b.page, 'notebook-shared-outputs');
      assert.deepEqual([...a.errors, ...b.errors], []);
    } finally {
      await a.close();
      await b?.close();
    }
  });

  it('says why on every disabled button of the working pages', async () => {
    // One context, a full load of each page (goto resolves once the new document loaded, so no
    // button of the page before is read).
    await onPage(server, '/models', async (page) => {
      for (const at of ['/models', '/models/m/marts.customer_orders', '/models/runs', '/notebooks', '/notebooks/notebooks/day_one.dpnb', '/sql', '/masking', '/quality', '/versioning', '/metrics', '/connectors', '/admin']) {
        if (at !== '/models') await page.goto(at);
        await page.getByRole('navigation', { name: 'Pages' }).waitFor();
        await page.locator('main button').first().waitFor();
        const silent = await page.locator('button:disabled').evaluateAll((buttons) =>
          buttons.filter((b) => !(b.getAttribute('title') ?? '').trim() && !b.getAttribute('aria-describedby')).map((b) => (b.getAttribute('aria-label') ?? b.textContent ?? '').trim()),
        );
        assert.deepEqual(silent, [], `disabled buttons without a reason on ${at}`);
      }
    });
  });

  it('gives the editor text at least 4.5:1 contrast in dark mode', async () => {
    await onPage(
      server,
      '/sql',
      async (page) => {
        await page.locator('.dp-sql .cm-content').waitFor();
        const ratios = await page.evaluate(() => {
          const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
          const lum = (c: number[]) => {
            const [r, g, b] = c.map((v) => {
              const x = v / 255;
              return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
            });
            return 0.2126 * r + 0.7152 * g + 0.0722 * b;
          };
          const ratio = (a: number[], b: number[]) => {
            const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
            return (hi + 0.05) / (lo + 0.05);
          };
          // The editor's background: the first ancestor of the text that paints one.
          const background = (el: Element): number[] => {
            for (let e: Element | null = el; e; e = e.parentElement) {
              // The first opaque background (a translucent tint such as the active line's is skipped).
              const c = getComputedStyle(e).backgroundColor;
              const alpha = /rgba/.test(c) ? Number((c.match(/[\d.]+/g) ?? [])[3] ?? 1) : c === 'transparent' ? 0 : 1;
              if (alpha >= 0.99) return rgb(c);
            }
            return [255, 255, 255];
          };
          const lines = [...document.querySelectorAll('.dp-sql .cm-line, .dp-sql .cm-line span')];
          return lines.map((el) => ({ text: el.textContent ?? '', ratio: ratio(rgb(getComputedStyle(el).color), background(el)) }));
        });
        assert.ok(ratios.length > 0);
        const low = ratios.filter((r) => r.ratio < 4.5);
        assert.deepEqual(low, [], `editor text under 4.5:1 in dark mode (lowest ${Math.min(...ratios.map((r) => r.ratio)).toFixed(2)})`);
      },
      { colorScheme: 'dark' },
    );
  });
});
