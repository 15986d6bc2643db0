/**
 * The example third-party page (examples/plugins/ui-page-example): a prebuilt ES module that
 * imports react and @dp/ui by bare name. In headless Chromium against a real dp server on the
 * shop, it appears in the navigation, loads through the shell's import map (one React: its
 * hooks work inside the shell's tree) and shows the shop's tables from its own route.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers.js';
import { onPage, screenshot, shopForTests, UI_SUITE_TIMEOUT_MS } from '../ui/browser.js';

describe('examples/plugins/ui-page-example in the browser', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const example = path.join(REPO_ROOT, 'examples', 'plugins', 'ui-page-example');
  const server = shopForTests({ appendProjectYml: `plugins:\n  paths: [${JSON.stringify(example)}]` });

  it('shows the third-party page from the navigation, with the shell’s React and @dp/ui', async () => {
    await onPage(server, '/', async (page) => {
      await page.getByRole('link', { name: 'Largest tables' }).click();
      await page.waitForURL('**/largest-tables');
      // Rendered by the example's module: its own route's data, formatted by its sibling module.
      await page.getByRole('cell', { name: 'seeds.orders' }).waitFor();
      // useSession() from @dp/ui works: the page shares the shell's React and context.
      await page.getByText('Project shop, as admin').waitFor();
      // Its state (a hook) works: filtering rows re-renders.
      await page.getByLabel('Minimum rows').fill('100000000');
      await page.getByText('Nothing here yet').waitFor();
      const modules = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname));
      assert.ok(modules.includes('/api/ui/modules/ui-page-example/ui/page.js'), modules.join('\n'));
      assert.ok(modules.includes('/api/ui/modules/ui-page-example/ui/format.js'));
      assert.equal(modules.filter((m) => /\/react-dom-[^/]+\.js$/.test(m)).length, 1, 'one copy of react-dom');
      await screenshot(page, 'third-party-page');
    });
  });
});
