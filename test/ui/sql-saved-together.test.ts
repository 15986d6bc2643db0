/**
 * A saved query edited together on the SQL page, in headless Chromium against a real dp server with
 * authentication on a copy of examples/shop (issue 37, the SQL page's part): two people who open the
 * same `queries/<name>.sql` from "Saved queries" join its shared document, see each other and
 * each other's typing live; Ctrl/Cmd+Enter runs the shared text; the save writes the file
 * through the socket and a save over a change on disk is reported, not written; a viewer's
 * keystrokes change nothing. An unsaved tab stays a local draft.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { jsonApi, gridColumn, login, openPage, screenshot, sharedEditorText, shopForTests, waitForSharedText, type OpenedPage, pageErrorsAfterLogin, setUpTeam, UI_SUITE_TIMEOUT_MS } from './browser.js';

const QUERY_FILE = 'queries/answers.sql';
describe('a saved query edited together on the SQL page (shop, --auth)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests({ auth: true, build: false });
  const read = () => fs.readFileSync(path.join(server.root, QUERY_FILE), 'utf8');

  const api = jsonApi(server);

  /** A person on /sql, logged in, with the saved query opened from the list and its shared editor live. */
  async function personOnQuery(name: string, username: string, password: string): Promise<OpenedPage> {
    const opened = await openPage(server, '/sql');
    const { page } = opened;
    await login(page, username, password);
    await page.getByRole('button', { name: 'Saved queries' }).click();
    await page.getByLabel('Saved queries').getByRole('button', { name }).click();
    await page.getByRole('tab', { name, selected: true }).waitFor();
    await page.locator('.dp-sql [data-testid="collab-editor"]').getByText('live', { exact: true }).waitFor();
    await page.locator('.dp-sql [data-testid="collab-editor"] .cm-content').waitFor();
    return opened;
  }

  it('sets up an admin, an editor, a viewer and two saved queries', async () => {
    const adminToken = await setUpTeam(api);
    const saved = await api('PUT', `/api/files/${QUERY_FILE}`, { content: 'SELECT 42 AS answer\n', base_sha256: null }, adminToken);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    fs.writeFileSync(path.join(server.root, 'queries', 'sevens.sql'), 'SELECT 7 AS seven\n');
  });

  it("two people on one saved query see each other and each other's edits; Ctrl+Enter runs the shared text; the save writes the file", async () => {
    const a = await personOnQuery('answers', 'ada', 'lovelace1');
    const b = await personOnQuery('answers', 'eve', 'eve-pass1');
    try {
      await a.page.getByTestId('collab-peers').getByText('eve').waitFor();
      await b.page.getByTestId('collab-peers').getByText('ada').waitFor();

      // A types at the end of the first line; B sees it, with A's cursor.
      await a.page.locator('.dp-sql .cm-line').first().click();
      await a.page.keyboard.press('End');
      await a.page.keyboard.type(', 43 AS more', { delay: 10 });
      await waitForSharedText(b.page, (t) => t.startsWith('SELECT 42 AS answer, 43 AS more'), "B sees A's edit");
      await b.page.locator('.dp-peer-caret').getByText('ada (admin)').waitFor();
      await b.page.getByTestId('collab-editor').getByText('unsaved', { exact: true }).waitFor();

      // B runs the shared text (A's edit included) with Ctrl+Enter, as in any tab.
      await b.page.locator('.dp-sql .cm-line').first().click();
      await b.page.keyboard.press('Control+Enter');
      await b.page.getByTestId('results-grid').getByRole('button', { name: 'more' }).waitFor();
      assert.deepEqual(await gridColumn(b.page, 1), ['43']);
      await screenshot(b.page, 'sql-saved-together');

      // B saves with Ctrl+S (the socket save): the file has A's edit, and both see it saved.
      await b.page.keyboard.press('Control+S');
      await b.page.getByTestId('collab-editor').getByText(/^saved /).waitFor();
      assert.equal(read(), 'SELECT 42 AS answer, 43 AS more\n');

      // A change made on disk meanwhile (the CLI, another tool) is reported, never written over.
      const onDisk = 'SELECT 1 AS from_the_cli\n';
      fs.writeFileSync(path.join(server.root, QUERY_FILE), onDisk);
      await a.page.keyboard.type(', 44 AS again', { delay: 10 });
      await waitForSharedText(b.page, (t) => t.includes('44 AS again'), "B sees A's second edit");
      await a.page.getByTestId('collab-editor').getByRole('button', { name: 'Save', exact: true }).click();
      await a.page.getByTestId('collab-conflict').waitFor();
      assert.equal(read(), onDisk, 'nothing written over the change on disk');
      assert.deepEqual(pageErrorsAfterLogin(a, b), []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a viewer sees the saved query live and its keystrokes change nothing; a draft tab stays local", async () => {
    const a = await personOnQuery('sevens', 'ada', 'lovelace1');
    const v = await personOnQuery('sevens', 'vic', 'vic-pass1');
    try {
      await v.page.getByTestId('collab-editor').getByText('read-only', { exact: true }).waitFor();
      await v.page.locator('.dp-sql .cm-line').first().click();
      await v.page.keyboard.type('zzz');
      assert.ok(!(await sharedEditorText(v.page)).includes('zzz'), "the viewer's keystrokes left its editor as it was");

      await a.page.locator('.dp-sql .cm-line').first().click();
      await a.page.keyboard.press('Control+Home');
      await a.page.keyboard.type('-- checked\n', { delay: 10 });
      await waitForSharedText(v.page, (t) => t.startsWith('-- checked\nSELECT 7 AS seven'), "the viewer sees the admin's edit");
      assert.ok(!(await sharedEditorText(a.page)).includes('zzz'), "the admin never sees the viewer's keystrokes");

      // A new tab is a draft of this browser: the plain editor, no shared document.
      await a.page.getByRole('button', { name: 'New query tab' }).click();
      await a.page.locator('.dp-sql [data-testid="code-editor"] .cm-content').waitFor();
      assert.equal(await a.page.locator('.dp-sql [data-testid="collab-editor"]').count(), 0);
      assert.deepEqual(pageErrorsAfterLogin(a, v), []);
    } finally {
      await a.close();
      await v.close();
    }
  });
});
