/**
 * A trimmed deployment in headless Chromium: with the masking and quality plugins disabled their
 * pages leave the navigation and their paths answer the shell's "no page" message; the other
 * pages keep working. With the ui plugin disabled, / is gone and the API answers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { onPage, screenshot, shopForTests, UI_SUITE_TIMEOUT_MS } from './browser.js';

describe('web UI of a trimmed deployment', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests({ build: false, appendProjectYml: 'plugins:\n  disable: [masking, quality]' });

  it('drops the pages of disabled plugins and keeps the rest', async () => {
    await onPage(server, '/', async (page) => {
      await page.waitForURL('**/sql');
      const nav = await page.getByRole('navigation', { name: 'Pages' }).getByRole('link').allInnerTexts();
      assert.deepEqual(nav.map((t) => t.trim()), ['SQL', 'Overview', 'Explorer', 'Models', 'Notebooks', 'Streams', 'Connectors', 'Metrics', 'Versioning', 'Administration', 'Docs & guide']);
      await page.goto('/masking');
      await page.getByRole('heading', { name: 'No page at /masking' }).waitFor();
      await page.getByTestId('plugins-menu').click();
      await page.getByText('Disabled: masking, quality').waitFor();
      await screenshot(page, 'trimmed');
    });
  });
});
