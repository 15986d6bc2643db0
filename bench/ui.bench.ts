/**
 * The web UI in headless Chromium against an in-process server: the gzipped bytes of the first
 * screen (every script, style and document `/` loads until the SQL workspace is ready; target
 * under 500 KB), and the time from Ctrl+Enter to the first rows of a 10,000-row result on screen
 * (median of 5).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { App } from '../kernel/app.js';
import { createServer } from '../kernel/http.js';
import type { BenchResult } from './util.js';

const FIRST_SCREEN_TARGET_BYTES = 500 * 1024;

export default async function run(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-ui-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\n');
  const app = await App.boot({ projectRoot: root, serving: true });
  await app.start();
  await app.db.run(
    "CREATE TABLE bench_rows AS SELECT i AS id, 'customer ' || i AS name, i * 1.25 AS amount, DATE '2024-01-01' + (i % 365)::INTEGER AS day, i % 7 = 0 AS flagged FROM range(10000) t(i)",
  );
  const server = await createServer(app);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
  const browser = await chromium.launch({ executablePath: process.env.DP_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    // First screen: a fresh context (empty cache), `/` until the SQL editor is up.
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    const bodies: Array<Promise<{ raw: number; gz: number }>> = [];
    page.on('response', (res) => {
      const type = res.request().resourceType();
      if (!res.url().startsWith(url) || !['document', 'script', 'stylesheet'].includes(type)) return;
      bodies.push(
        res
          .body()
          .then((b) => ({ raw: b.length, gz: gzipSync(b).length }))
          .catch(() => ({ raw: 0, gz: 0 })),
      );
    });
    await page.goto(url + '/');
    await page.locator('.dp-sql .cm-content').waitFor();
    await page.waitForLoadState('networkidle');
    const sizes = await Promise.all(bodies);
    const gz = sizes.reduce((a, s) => a + s.gz, 0);
    const raw = sizes.reduce((a, s) => a + s.raw, 0);

    // Time to first rows: Ctrl+Enter until a cell of the 10,000-row result is on screen.
    await page.getByLabel('Rows per page').selectOption('10000');
    const times: number[] = [];
    for (let i = 1; i <= 5; i++) {
      // Each run marks its rows (the last column holds the run number), so the previous result on screen never counts.
      const sql = `SELECT *, ${i} AS run FROM bench_rows ORDER BY id`;
      await page.locator('.dp-sql .cm-content').click();
      await page.keyboard.press('Control+A');
      await page.keyboard.insertText(sql);
      // Timed in the page: from just before the key press to the first frame after this run's first row rendered.
      await page.evaluate((run) => {
        const w = window as unknown as { dpBench?: Promise<number>; dpStart?: number };
        w.dpBench = new Promise<number>((resolve) => {
          const check = () => {
            const row = document.querySelector('[data-testid="results-grid"] [role="row"]:not(.dp-grid-head)');
            const cells = row?.querySelectorAll('[role="gridcell"]');
            if (cells && cells.length && cells[cells.length - 1].textContent === String(run)) {
              observer.disconnect();
              requestAnimationFrame(() => resolve(performance.now() - w.dpStart!));
            }
          };
          const observer = new MutationObserver(check);
          observer.observe(document.body, { childList: true, subtree: true, characterData: true });
        });
        w.dpStart = performance.now();
      }, i);
      await page.keyboard.press('Control+Enter');
      times.push(await page.evaluate(() => (window as unknown as { dpBench: Promise<number> }).dpBench));
      await page.getByTestId('result-status').getByText('Rows 1–10000').waitFor();
    }
    times.sort((a, b) => a - b);
    await context.close();
    return [
      { name: 'first screen (/ until the SQL editor is ready), gzipped', value: gz / 1024, unit: 'KB', target: '< 500 KB', ok: gz < FIRST_SCREEN_TARGET_BYTES },
      { name: 'first screen, uncompressed', value: raw / 1024, unit: 'KB' },
      { name: 'time to first rows of a 10,000-row result (median of 5)', value: times[2], unit: 'ms' },
    ];
  } finally {
    await browser.close();
    await server.close();
    await app.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
