/**
 * Project files edited together in headless Chromium against a real dp server with authentication on a copy
 * of examples/shop (issue 37): two browser contexts (two people) on a model's SQL and on
 * project.yml see each other's typing, presence and cursor live; a viewer's keystrokes change
 * nothing; a save over a change made on disk meanwhile (as the CLI would) is reported, never
 * written over, and the file on disk can be loaded into the shared document. The pages run
 * under the CSP without 'unsafe-inline' styles: any refused style is a console error, and none
 * may appear (issue 38 point 4).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { jsonApi, login, openPage, screenshot, sharedEditorText, shopForTests, waitForSharedText, type OpenedPage, pageErrorsAfterLogin, setUpTeam, UI_SUITE_TIMEOUT_MS } from './browser.js';

const MODEL_FILE = 'transform/staging/stg_customers.sql';
describe('project files edited together (shop, --auth)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests({ auth: true, build: false });
  const read = (rel: string) => fs.readFileSync(path.join(server.root, rel), 'utf8');

  const api = jsonApi(server);

  /** A person's page on `urlPath`, logged in, with the shared editor live. */
  async function personOn(urlPath: string, username: string, password: string): Promise<OpenedPage> {
    const opened = await openPage(server, urlPath);
    await login(opened.page, username, password);
    await opened.page.getByTestId('collab-editor').getByText('live', { exact: true }).waitFor();
    await opened.page.locator('[data-testid="collab-editor"] .cm-content').waitFor();
    return opened;
  }

  it('sets up an admin, an editor and a viewer', async () => {
    const adminToken = await setUpTeam(api);
  });

  it("two people on one model see each other's text, presence and cursor live, and the save writes both", async () => {
    const original = read(MODEL_FILE);
    const a = await personOn('/models/m/staging.stg_customers', 'ada', 'lovelace1');
    const b = await personOn('/models/m/staging.stg_customers', 'eve', 'eve-pass1');
    try {
      await a.page.getByTestId('collab-peers').getByText('eve').waitFor();
      await b.page.getByTestId('collab-peers').getByText('ada').waitFor();
      await a.page.locator('[data-testid="collab-editor"] .cm-content').click();
      await a.page.keyboard.press('Control+End');
      await a.page.keyboard.type('\n-- reviewed by ada', { delay: 10 });
      await waitForSharedText(b.page, (t) => t.endsWith('-- reviewed by ada'), "B sees A's edit");
      // B sees A's cursor with A's name and role, set by the server.
      await b.page.locator('.dp-peer-caret').getByText('ada (admin)').waitFor();

      await b.page.locator('[data-testid="collab-editor"] .cm-content').click();
      await b.page.keyboard.press('Control+End');
      await b.page.keyboard.type('\n-- and eve', { delay: 10 });
      await waitForSharedText(a.page, (t) => t.endsWith('-- reviewed by ada\n-- and eve'), "A sees B's edit");
      await screenshot(b.page, 'model-together');

      await a.page.getByTestId('collab-editor').getByRole('button', { name: 'Save', exact: true }).click();
      await a.page.getByTestId('collab-editor').getByText(/^saved /).waitFor();
      assert.equal(read(MODEL_FILE), `${original}\n-- reviewed by ada\n-- and eve`);
      assert.deepEqual(pageErrorsAfterLogin(a, b), []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a viewer on project.yml sees edits live and its keystrokes change nothing; a save over a change on disk is reported, not written", async () => {
    const a = await personOn('/models/f/project.yml', 'ada', 'lovelace1');
    const v = await personOn('/models/f/project.yml', 'vic', 'vic-pass1');
    try {
      await v.page.getByTestId('collab-editor').getByText('read-only', { exact: true }).waitFor();
      // The first line: clicking the middle of a long file would scroll its top out of view.
      await v.page.locator('[data-testid="collab-editor"] .cm-line').first().click();
      await v.page.keyboard.type('zzz');
      await v.page.keyboard.press('Enter');
      // Typed where it clicked (in view): nothing appeared there, and its document did not change.
      assert.ok(!(await sharedEditorText(v.page)).includes('zzz'), "the viewer's keystrokes left its editor as it was");
      assert.equal(await v.page.getByTestId('collab-editor').getByText('unsaved', { exact: true }).count(), 0);

      await a.page.locator('[data-testid="collab-editor"] .cm-line').first().click();
      await a.page.keyboard.press('Control+Home');
      await a.page.keyboard.type('# edited together\n', { delay: 10 });
      const shared = await waitForSharedText(v.page, (t) => t.startsWith('# edited together\n'), "the viewer sees the admin's edit");
      assert.ok(!shared.includes('zzz'));
      assert.ok(!(await sharedEditorText(a.page)).includes('zzz'), "the admin never sees the viewer's keystrokes");

      // Meanwhile the file changes on disk (the CLI, another editor).
      const onDisk = `# changed by the CLI\n${read('project.yml')}`;
      fs.writeFileSync(path.join(server.root, 'project.yml'), onDisk);
      await a.page.getByTestId('collab-editor').getByRole('button', { name: 'Save', exact: true }).click();
      await a.page.getByTestId('collab-conflict').waitFor();
      await screenshot(a.page, 'file-conflict');
      assert.equal(read('project.yml'), onDisk, 'nothing written over the change on disk');

      // Taking the file from disk puts it into the shared document for everyone.
      await a.page.getByRole('button', { name: /Load the file from disk/ }).click();
      await waitForSharedText(v.page, (t) => t.startsWith('# changed by the CLI\n') && !t.includes('# edited together'), 'the viewer sees the file from disk');
      await a.page.getByTestId('collab-editor').getByText(/^saved /).waitFor();
      assert.equal(read('project.yml'), onDisk);
      assert.deepEqual(pageErrorsAfterLogin(a, v), []);
    } finally {
      await a.close();
      await v.close();
    }
  });

  it('renders the shell, the SQL page, the notebooks and the models under the CSP without inline styles (only /docs keeps them)', async () => {
    const res = await fetch(`${server.url}/sql`, { headers: { accept: 'text/html' } });
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /style-src 'self'(;|$)/, csp);
    const docs = await fetch(`${server.url}/docs/static/index.html`);
    assert.match(docs.headers.get('content-security-policy') ?? '', /style-src 'self' 'unsafe-inline'(;|$)/);
    const p = await openPage(server, '/sql');
    try {
      await login(p.page, 'ada', 'lovelace1');
      await p.page.locator('.dp-sql .cm-content').waitFor();
      // CodeMirror's own theme applied (its styles are adopted sheets, not refused <style> elements).
      assert.equal(await p.page.locator('.dp-sql .cm-editor').evaluate((el) => getComputedStyle(el).display), 'flex');
      for (const route of ['/notebooks', '/models', '/docs']) {
        await p.page.goto(route);
        await p.page.waitForLoadState('networkidle');
      }
      await p.page.locator('.swagger-ui .info').waitFor();
      assert.deepEqual(pageErrorsAfterLogin(p), []);
    } finally {
      await p.close();
    }
  });
});
