/**
 * The web UI of a dp server with authentication on a copy of examples/shop, in headless Chromium: the first
 * admin is set up in the browser, an admin adds a masking policy in the masking page and a viewer
 * then sees the column masked and marked, and sees no action beyond their role (the API refuses
 * them anyway). One server and one browser for the file.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gridColumn, login, onPage, openPage, runSql, screenshot, setupAdmin, shopForTests, withAttribute, UI_SUITE_TIMEOUT_MS } from './browser.js';

describe('web UI with auth (shop)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests({ auth: true });

  const api = async (method: string, urlPath: string, body?: unknown, token?: string) => {
    const res = await fetch(server.url + urlPath, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json().catch(() => null) };
  };

  it('sets up the first admin in the browser, shows the role, and logs out to the login form', async () => {
    await onPage(
      server,
      '/sql',
      async (page) => {
        await page.getByText('No user exists yet').waitFor();
        await screenshot(page, 'first-admin-setup');
        await setupAdmin(page, 'ada', 'lovelace1');
        await page.getByTestId('user-menu').getByText('admin').waitFor();
        await page.locator('.dp-sql .cm-content').waitFor();
        // Back where they were going, with every page an admin may see.
        for (const title of ['SQL', 'Explorer', 'Models', 'Quality', 'Masking']) await page.getByRole('link', { name: title, exact: true }).waitFor();
        await page.getByTestId('user-menu').click();
        await page.getByRole('button', { name: 'Log out' }).click();
        await page.getByRole('button', { name: 'Log in' }).waitFor();
        // A wrong password shows the API's message, not a blank page.
        await page.getByLabel('Username').fill('ada');
        await page.getByLabel('Password', { exact: true }).fill('wrong-password');
        await page.getByRole('button', { name: 'Log in' }).click();
        await page.getByRole('alert').waitFor();
        assert.match(await page.getByRole('alert').innerText(), /password|credentials|invalid/i);
        await screenshot(page, 'login-error');
      },
      // The wrong password's 401 (and the session check's before the setup) are the browser's own log lines.
      { expectedErrors: /401|Unauthorized/ },
    );
  });

  it('adds a masking policy in the masking page; a viewer then sees the column masked and marked', async () => {
    const admin = await api('POST', '/api/auth/login', { username: 'ada', password: 'lovelace1' });
    assert.equal(admin.status, 200);
    assert.equal((await api('POST', '/api/users', { username: 'vic', password: 'viewer12', role: 'viewer' }, admin.body.token)).status, 201);

    const a = await openPage(server, '/masking');
    try {
      await login(a.page, 'ada', 'lovelace1');
      await a.page.getByRole('button', { name: '+ Add policy' }).click();
      await a.page.getByLabel('Table').selectOption('seeds.customers');
      await a.page.getByLabel('Column', { exact: true }).selectOption('email');
      await a.page.getByLabel('Method').selectOption('email');
      await a.page.getByRole('button', { name: 'Save policy' }).click();
      await a.page.getByRole('cell', { name: 'seeds.customers.email' }).waitFor();
      // The preview as a viewer shows the masked sample.
      await a.page.getByRole('tab', { name: 'Preview as a role' }).click();
      await a.page.getByLabel('Table to preview').selectOption('seeds.customers');
      await a.page.getByLabel('Role to preview as').selectOption('viewer');
      await a.page.getByRole('button', { name: 'Preview' }).click();
      await a.page.getByText('masked for viewer: email').waitFor();
      await a.page.getByTestId('results-grid').getByText('***@example.com').first().waitFor();
      await screenshot(a.page, 'masking');
    } finally {
      await a.close();
    }

    const v = await openPage(server, '/sql');
    try {
      await login(v.page, 'vic', 'viewer12');
      await v.page.getByTestId('user-menu').getByText('viewer').waitFor();
      await runSql(v.page, 'SELECT customer_id, email FROM seeds.customers ORDER BY customer_id LIMIT 3');
      await v.page.getByTestId('result-status').getByText('Rows 1–3').waitFor();
      const emails = await gridColumn(v.page, 1);
      assert.deepEqual(emails, ['***@example.com', '***@example.com', '***@example.org']);
      const header = v.page.locator('[data-testid="results-grid"] [role="columnheader"][data-masked="true"]');
      assert.equal(await header.count(), 1);
      assert.match(await header.innerText(), /email/);
      await screenshot(v.page, 'sql-masked-viewer');
    } finally {
      await v.close();
    }
  });

  it('hides or disables what a viewer may not do, and the API still refuses it', async () => {
    await onPage(server, '/models', async (page) => {
      await login(page, 'vic', 'viewer12');
      await page.locator('[data-testid="graph"] [data-node-id="marts.customer_orders"]').waitFor();
      // Disabled once the page knows the role: wait for that state rather than read it at once.
      await page.getByRole('button', { name: 'Transform all', disabled: true }).waitFor();
      await page.getByRole('button', { name: '+ New model', disabled: true }).waitFor();
      await page.goto('/masking');
      await page.getByRole('cell', { name: 'seeds.customers.email' }).waitFor();
      await page.getByRole('button', { name: '+ Add policy', disabled: true }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Remove' }).count(), 0);
      // The environment switch is an admin's.
      await page.locator('select#dp-env:disabled').waitFor();
      const status = await page.evaluate(async () => (await fetch('/api/transform', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status);
      assert.equal(status, 403);
      // Before the login the shell's session check answers 401, then the refused transform 403: the browser logs both.
    }, { expectedErrors: /status of 40[13]/ });
  });

  it('an admin adds a user, changes their role, resets their password and removes them; sets and deletes a secret by name', async () => {
    await onPage(server, '/admin', async (page) => {
      await login(page, 'ada', 'lovelace1');
      await page.getByRole('button', { name: '+ Add user' }).click();
      await page.getByLabel('New username').fill('eve');
      await page.getByLabel("New user's password").fill('short');
      const add = page.getByRole('dialog').getByRole('button', { name: 'Add user' });
      await withAttribute(add, 'title', 'The password needs at least 8 characters').waitFor();
      await page.getByLabel("New user's password").fill('editor123');
      await page.getByLabel("New user's role").selectOption('editor');
      await add.click();
      await page.getByRole('cell', { name: 'eve', exact: true }).waitFor();
      // Ada cannot demote or remove herself.
      assert.equal(await page.getByLabel('Role of ada').isDisabled(), true);
      assert.equal(await page.getByRole('button', { name: 'Remove ada' }).isDisabled(), true);
      await page.getByLabel('Role of eve').selectOption('viewer');
      // The select follows the server's answer (it is controlled by the reloaded list).
      await page.waitForFunction(() => document.querySelector<HTMLSelectElement>('select[aria-label="Role of eve"]')?.value === 'viewer');
      const token = (await api('POST', '/api/auth/login', { username: 'ada', password: 'lovelace1' })).body.token as string;
      assert.equal(((await api('GET', '/api/users', undefined, token)).body as Array<{ username: string; role: string }>).find((u) => u.username === 'eve')?.role, 'viewer');
      await page.getByRole('button', { name: 'Reset the password of eve' }).click();
      await page.getByLabel('New password').fill('newpass123');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('dialog').waitFor({ state: 'hidden' });
      assert.equal((await api('POST', '/api/auth/login', { username: 'eve', password: 'newpass123' })).status, 200);
      assert.equal((await api('POST', '/api/auth/login', { username: 'eve', password: 'editor123' })).status, 401);
      await page.getByRole('button', { name: 'Remove eve' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
      await page.getByRole('cell', { name: 'eve', exact: true }).waitFor({ state: 'detached' });

      await page.getByRole('tab', { name: 'Secrets' }).click();
      await page.getByLabel('Secret name').fill('WAREHOUSE_TOKEN');
      await page.getByLabel('Secret value').fill('s3cr3t-value-xyz');
      await page.getByRole('button', { name: 'Set secret' }).click();
      await page.getByRole('cell', { name: 'WAREHOUSE_TOKEN', exact: true }).waitFor();
      // Names only: the value (and its masked form) never reaches the page.
      assert.doesNotMatch(await page.content(), /s3cr3t-value-xyz|s3cr/);
      await page.getByRole('button', { name: 'Delete WAREHOUSE_TOKEN' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('cell', { name: 'WAREHOUSE_TOKEN', exact: true }).waitFor({ state: 'detached' });
      await screenshot(page, 'admin');
    }, { expectedErrors: /status of 401/ });
  });

  it('asks before switching the environment for everyone and shows a banner while another is active', async () => {
    await onPage(server, '/sql', async (page) => {
      await login(page, 'ada', 'lovelace1');
      assert.equal(await page.getByTestId('environment-banner').count(), 0);
      await page.locator('select#dp-env').selectOption('prod');
      const dialog = page.getByRole('dialog');
      assert.match(await dialog.innerText(), /every user of this server/);
      // Cancel leaves everything as it was.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await page.waitForFunction(() => document.querySelector<HTMLSelectElement>('select#dp-env')?.value === '');
      assert.equal(await page.getByTestId('environment-banner').count(), 0);
      await page.locator('select#dp-env').selectOption('prod');
      await page.getByRole('button', { name: 'Switch for everyone' }).click();
      await page.getByTestId('environment-banner').getByText('prod').waitFor();
      await screenshot(page, 'environment-banner');
      // Back, for the tests that may follow.
      await page.locator('select#dp-env').selectOption('dev');
      await page.getByRole('button', { name: 'Switch for everyone' }).click();
      await page.getByTestId('environment-banner').getByText('dev').waitFor();
      // Besides the session check's 401: a read that met a switch's brief 503 (the database
      // reopening) was retried, and the browser logs that 503 itself (as in workbench.test.ts).
    }, { expectedErrors: /status of (401|503)/ });
  });
});
