/**
 * Shared helpers of the web UI tests (docs/ui.md "Testing a page"): the dp server of a copy of
 * examples/shop (a built copy from builtShop, or a bare one), booted and served in this process
 * on 127.0.0.1 (startServer: the same App and HTTP server `dp serve` runs in its engine process,
 * without the two process boots; the UI tests are about the pages, not the process), and Debian's
 * headless Chromium driven by playwright-core (never a downloaded browser). One server and one
 * browser per test file (one more per page open at the same time); each test's page starts
 * without the cookies and storage of the tests before it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { builtShop, copyShop, REPO_ROOT, startServer } from '../helpers.js';

/** Screenshots land here (ignored by git; CI keeps them as artifacts). */
export const ARTIFACTS = path.join(REPO_ROOT, 'test', 'artifacts');

export interface DpServer {
  url: string;
  /** The project folder (a temp copy). */
  root: string;
  close(): Promise<void>;
}

export interface ShopOptions {
  /** Serve with authentication (`dp serve --auth`). */
  auth?: boolean;
  /**
   * Files written into the copy (`project.yml` replaces the example's): a built copy gets them
   * after the build, a bare one (`build: false`) before anything reads them.
   */
  files?: Record<string, string>;
  /** Text appended to the copy's project.yml (e.g. a `plugins:` block). */
  appendProjectYml?: string;
  /** A copy already seeded and transformed (default true), so the marts exist. */
  build?: boolean;
}

/** The dp server of a fresh copy of examples/shop, on 127.0.0.1 and a free port. */
export async function startShop(options: ShopOptions = {}): Promise<DpServer> {
  // builtShop copies a shop built once (a file copy instead of a boot, a seed and a transform).
  const root = (options.build ?? true) ? await builtShop(options.files ?? {}) : copyShop(options.files ?? {});
  if (options.appendProjectYml) fs.appendFileSync(path.join(root, 'project.yml'), '\n' + options.appendProjectYml + '\n');
  return serveProject(root, { auth: options.auth });
}

/**
 * The test file's shop server: started (startShop) before the file's tests, stopped after them
 * together with the file's browser. The returned server stands for the started one, so tests
 * read `server.url` and `server.root` as usual.
 */
export function shopForTests(options: ShopOptions = {}): DpServer {
  let started: DpServer | undefined;
  const current = (): DpServer => {
    if (!started) throw new Error('the shop server is not started yet (use it inside a test)');
    return started;
  };
  before(async () => {
    started = await startShop(options);
  });
  after(async () => {
    await closeBrowser();
    await started?.close();
  });
  return {
    get url() {
      return current().url;
    },
    get root() {
      return current().root;
    },
    close: () => current().close(),
  };
}

/**
 * The dp server of a project folder, booted in this process (kernel App and HTTP server, as in
 * `dp serve`'s engine process) on 127.0.0.1 and a free port, with the scheduler off.
 */
export async function serveProject(root: string, options: { auth?: boolean } = {}): Promise<DpServer> {
  const served = await startServer(root, { auth: options.auth });
  return { url: served.url, root, close: () => served.close() };
}

/**
 * A UI suite's limit: a guard against a hang, with room for a loaded CI machine (at load 40 a
 * 12-test suite took more than 5 minutes).
 */
export const UI_SUITE_TIMEOUT_MS = 900_000;

/**
 * Debian's old headless shell (package chromium-headless-shell, `chromium --headless=old` before
 * Chromium 132) when installed: a page costs it about half the CPU of the full browser's headless
 * mode (README "Tests": UI tests). Otherwise the full browser.
 */
const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';

/** The browser the UI tests run: DP_CHROMIUM, else the headless shell when installed, else /usr/bin/chromium. */
export const CHROMIUM = process.env.DP_CHROMIUM ?? (fs.existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : '/usr/bin/chromium');

const VIEWPORT = { width: 1400, height: 900 };

/**
 * A browser of the test file with one persistent context (its own profile folder) and one tab
 * that the file's tests take in turn. A page opened in the profile finds the UI's scripts
 * compiled in its code cache (an incognito context compiles the whole bundle again for every
 * page), and a test that navigates the slot's tab instead of opening a new one also keeps the
 * tab's renderer process and its page set-up: a page then costs Chromium about half of a new
 * page in the same profile (README "Tests": UI tests).
 * A test takes a free slot and gets the tab cleared of the earlier test's cookies, permissions,
 * site data and listeners (openPage); when it is done the tab leaves the page (unloaded, its
 * sockets and timers stopped, as a closed page's). Pages open at the same time (two people)
 * take one slot each, so each has its own cookies.
 */
interface BrowserSlot {
  context: BrowserContext;
  baseURL: string;
  profile: string;
  busy: boolean;
  /** The tab the slot's tests take in turn (none yet, or closed after a failed release). */
  tab?: Page;
}

const slots: BrowserSlot[] = [];

async function takeSlot(baseURL: string): Promise<BrowserSlot> {
  const free = slots.find((s) => !s.busy && s.baseURL === baseURL);
  if (free) {
    free.busy = true;
    return free;
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-chromium-'));
  const slot: BrowserSlot = { context: undefined as unknown as BrowserContext, baseURL, profile, busy: true };
  slots.push(slot);
  try {
    slot.context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      baseURL,
      viewport: VIEWPORT,
    });
    slot.tab = slot.context.pages()[0];
  } catch (e) {
    slots.splice(slots.indexOf(slot), 1);
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
  return slot;
}

/**
 * Where a released tab waits for the next test: a small answer of the same server (a JSON
 * endpoint, no script), so the UI page is unloaded and the tab stays on the site's renderer.
 */
const RELEASED_PATH = '/api/health';

/**
 * The page events a test (or openPage) listens to. Playwright's own listeners are on `close`
 * and `crash` (page.removeAllListeners() would drop them too), so these are dropped by name.
 */
const TEST_EVENTS = ['console', 'dialog', 'domcontentloaded', 'download', 'filechooser', 'frameattached', 'framedetached', 'framenavigated', 'load', 'pageerror', 'popup', 'request', 'requestfailed', 'requestfinished', 'response', 'websocket', 'worker'] as const;

function dropTestListeners(page: Page): void {
  for (const event of TEST_EVENTS) page.removeAllListeners(event);
}

/**
 * Gives the slot back after a test: other pages (a popup, a download's) close, the test's
 * listeners go and the tab leaves the test's page. A tab that cannot leave it is closed; the
 * next test opens a new one.
 */
async function releaseSlot(slot: BrowserSlot): Promise<void> {
  const { context, tab } = slot;
  try {
    await Promise.all(context.pages().filter((p) => p !== tab).map((p) => p.close()));
    if (tab && !tab.isClosed()) {
      try {
        dropTestListeners(tab);
        // Request handlers a test installed (page.route) would answer the next test's requests.
        await tab.unrouteAll({ behavior: 'ignoreErrors' });
        // A page that asks before it is left is left anyway, as a closed page would be.
        tab.on('dialog', (d) => void d.accept().catch(() => undefined));
        await tab.goto(RELEASED_PATH);
        dropTestListeners(tab);
      } catch {
        slot.tab = undefined;
        await tab.close().catch(() => undefined);
      }
    }
  } finally {
    slot.busy = false;
  }
}

/** Closes the file's browsers (after its tests; shopForTests does it). */
export async function closeBrowser(): Promise<void> {
  const all = slots.splice(0);
  await Promise.all(
    all.map(async (s) => {
      await s.context?.close().catch(() => undefined);
      fs.rmSync(s.profile, { recursive: true, force: true });
    }),
  );
}

export interface OpenedPage {
  page: Page;
  context: BrowserContext;
  /** Console errors and uncaught page errors seen so far (a page should have none). */
  errors: string[];
  close(): Promise<void>;
}

export interface OpenPageOptions {
  /** The system theme the page sees (default light). */
  colorScheme?: 'light' | 'dark';
  viewport?: { width: number; height: number };
}

/**
 * A page at `url + path` with no cookies, permissions or site data (localStorage, session
 * storage) of an earlier test: the tab of a free browser of the file, cleared. `colorScheme`
 * picks the system theme the page sees. `close()` hands the tab back (unloaded).
 */
export async function openPage(server: { url: string }, urlPath = '/', options: OpenPageOptions = {}): Promise<OpenedPage> {
  const slot = await takeSlot(server.url);
  const { context } = slot;
  try {
    await context.clearCookies();
    await context.clearPermissions();
    const page = slot.tab && !slot.tab.isClosed() ? slot.tab : await context.newPage();
    slot.tab = page;
    // What the site stored in an earlier test (the profile keeps it, as a browser does; the tab
    // keeps its session storage).
    const origin = new URL(server.url).origin;
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'local_storage,indexeddb,cache_storage,service_workers' });
    await cdp.detach();
    // A tab released after a test is on the site (RELEASED_PATH); a new one has no session storage.
    if (new URL(page.url()).origin === origin) await page.evaluate(() => sessionStorage.clear());
    await page.emulateMedia({ media: null, colorScheme: options.colorScheme ?? 'light', reducedMotion: null, forcedColors: null, contrast: null });
    await page.setViewportSize(options.viewport ?? VIEWPORT);
    // Generous: a loaded CI machine renders slowly, and only a failing wait waits it out.
    page.setDefaultTimeout(45_000);
    page.setDefaultNavigationTimeout(45_000);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    await page.goto(urlPath);
    return { page, context, errors, close: () => releaseSlot(slot) };
  } catch (e) {
    await releaseSlot(slot);
    throw e;
  }
}

export interface PageStepOptions extends OpenPageOptions {
  /**
   * Console errors the steps provoke on purpose (the browser logs a refused request as
   * "… status of 409"); every other console or page error still fails the step.
   */
  expectedErrors?: RegExp;
}

/**
 * One step of a UI test: opens `urlPath` in a cleared tab (openPage), runs `steps` on the page,
 * checks that the page logged no console or page errors (but the `expectedErrors`), and hands
 * the tab back (the page unloaded), also when a step fails.
 */
export async function onPage(server: { url: string }, urlPath: string, steps: (page: Page, opened: OpenedPage) => Promise<void>, options: PageStepOptions = {}): Promise<void> {
  const { expectedErrors, ...openOptions } = options;
  const opened = await openPage(server, urlPath, openOptions);
  try {
    await steps(opened.page, opened);
    assert.deepEqual(
      opened.errors.filter((e) => !expectedErrors?.test(e)),
      [],
      `the page at ${urlPath} logged errors`,
    );
  } finally {
    await opened.close();
  }
}

/** Saves a full-page screenshot as test/artifacts/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/** Types SQL into the SQL workspace's editor (replacing its text) and runs it with Ctrl+Enter. */
export async function runSql(page: Page, sql: string): Promise<void> {
  const editor = page.locator('.dp-sql .cm-content');
  await editor.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(sql);
  await page.keyboard.press('Control+Enter');
}

/** The texts of the visible cells of the results grid's first column after the row number. */
export async function gridColumn(page: Page, index = 0): Promise<string[]> {
  return page.locator('[data-testid="results-grid"] [role="row"]:not(.dp-grid-head)').evaluateAll(
    (rows, i) => rows.map((r) => (r.querySelectorAll('[role="gridcell"]')[i as number] as HTMLElement | undefined)?.innerText ?? ''),
    index,
  );
}

/**
 * The element of `locator` once its attribute `name` is `value`: wait on it for a state the page
 * applies after an action (a title, a data- attribute) instead of reading the attribute at once.
 */
export function withAttribute(locator: Locator, name: string, value: string): Locator {
  return locator.and(locator.page().locator(`[${name}=${JSON.stringify(value)}]`));
}

/** Fills the login form and waits for the shell (the user menu) to appear. */
export async function login(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByTestId('user-menu').waitFor();
}

/** JSON calls to a test server as `token`'s bearer (none: anonymous); the body is null when not JSON. */
export function jsonApi(server: { url: string }) {
  return async (method: string, urlPath: string, body?: unknown, token?: string) => {
    const res = await fetch(server.url + urlPath, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
}

/**
 * The people of the collaboration tests on a server with auth and no user yet: ada (the first
 * admin, password lovelace1), eve (editor) and vic (viewer), each with the password
 * `<name>-pass1`. Resolves to ada's token.
 */
export async function setUpTeam(api: ReturnType<typeof jsonApi>): Promise<string> {
  const admin = await api('POST', '/api/auth/setup', { username: 'ada', password: 'lovelace1' });
  assert.equal(admin.status, 200);
  for (const [username, role] of [
    ['eve', 'editor'],
    ['vic', 'viewer'],
  ]) {
    const r = await api('POST', '/api/users', { username, password: `${username}-pass1`, role }, admin.body.token);
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  return admin.body.token as string;
}

/** The session check before the login form is a 401 the browser logs itself. */
const LOGIN_NOISE = /401|Unauthorized/;

/** What the pages logged as errors, the login form's expected 401 left out. */
export function pageErrorsAfterLogin(...pages: OpenedPage[]): string[] {
  return pages.flatMap((p) => p.errors).filter((e) => !LOGIN_NOISE.test(e));
}

/** Fills the first-admin form (auth on, no user yet) and waits for the shell. */
export async function setupAdmin(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Repeat the password').fill(password);
  await page.getByRole('button', { name: 'Create admin and log in' }).click();
  await page.getByTestId('user-menu').waitFor();
}

/**
 * The text of the page's shared editor (`CollaborativeEditor`) as it shows it, without
 * collaborators' name labels (drawn inside the text). CodeMirror draws only the lines in view:
 * with a long file, the lines at the top.
 */
export function sharedEditorText(page: Page): Promise<string> {
  return page.evaluate(() => {
    const content = document.querySelector('[data-testid="collab-editor"] .cm-content');
    if (!content) return '';
    const copy = content.cloneNode(true) as HTMLElement;
    for (const caret of copy.querySelectorAll('.dp-peer-caret')) caret.remove();
    return [...copy.querySelectorAll('.cm-line')].map((l) => l.textContent).join('\n');
  });
}

/** Waits until the shared editor's text passes `test` (another person's edit arriving); fails saying `what`. */
export async function waitForSharedText(page: Page, test: (text: string) => boolean, what: string): Promise<string> {
  const until = Date.now() + 45_000;
  let seen = '';
  while (Date.now() < until) {
    seen = await sharedEditorText(page);
    if (test(seen)) return seen;
    await page.waitForTimeout(50);
  }
  assert.fail(`${what}; the editor shows:\n${seen}`);
}
