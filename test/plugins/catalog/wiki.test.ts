import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, copyShop, DP_BIN, followOutput, makeProject, REPO_ROOT, runCli, runInProcess, startServer, type TestServer } from '../../helpers.js';

/** The pages issue 16 lists, by slug. */
const PAGES = {
  'getting-started': 'Getting started',
  models: 'Models and directives',
  seeds: 'Seeds',
  lineage: 'Lineage and impact',
  quality: 'Data quality',
  connectors: 'Connectors and CDC',
  masking: 'Column masking',
  streams: 'Streams and schedules',
  'semantic-layer': 'Semantic layer',
  versioning: 'Versioning, snapshots and backups',
  notebooks: 'Notebooks',
  auth: 'Authentication and roles',
  plugins: 'Plugins',
  'cli-reference': 'CLI reference',
};

const WIKI_DIR = path.join(REPO_ROOT, 'plugins', 'catalog', 'wiki');
const page = (slug: string) => fs.readFileSync(path.join(WIKI_DIR, `${slug}.md`), 'utf8');

/** Lines of the ```bash and ```text blocks of a page. */
function codeLines(markdown: string, languages = ['bash', 'text']): string[] {
  const lines: string[] = [];
  let inside = false;
  for (const line of markdown.split('\n')) {
    const fence = /^```(\w*)/.exec(line);
    if (fence) {
      inside = !inside && languages.includes(fence[1]!);
      continue;
    }
    if (inside) lines.push(line);
  }
  return lines;
}

/** Shell words of one command line (double and single quotes, no expansion). */
function words(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3]!));
  return out;
}

describe('wiki: the user guide', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(async () => s?.close());

  it('lists every page the guide needs, with titles and categories', async () => {
    const r = await s.request('GET', '/api/wiki');
    assert.equal(r.status, 200, r.text);
    const bySlug = Object.fromEntries(r.body.map((p: { slug: string; title: string }) => [p.slug, p.title]));
    for (const [slug, title] of Object.entries(PAGES)) assert.equal(bySlug[slug], title, slug);
    for (const p of r.body) assert.ok(p.category.length > 0, p.slug);
    assert.equal(r.body[0].slug, 'getting-started');
  });

  it('serves each page: title, category and its markdown', async () => {
    for (const [slug, title] of Object.entries(PAGES)) {
      const r = await s.request('GET', `/api/wiki/${slug}`);
      assert.equal(r.status, 200, `${slug}: ${r.text}`);
      assert.equal(r.body.title, title);
      assert.ok(r.body.content.startsWith('# '), slug);
      assert.ok(!r.body.content.startsWith('---'), `${slug}: front matter left in`);
      assert.ok(r.body.content.length > 400, slug);
    }
    const missing = await s.request('GET', '/api/wiki/nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'wiki_page_not_found');
    assert.equal((await s.request('GET', '/api/wiki/..%2F..%2Fpackage')).status, 404);
  });

  it('searches pages by words', async () => {
    const r = await s.request('GET', '/api/wiki?q=masking%20policy');
    assert.equal(r.status, 200);
    const slugs = r.body.map((p: { slug: string }) => p.slug);
    assert.ok(slugs.includes('masking'), slugs.join(','));
    assert.ok(!slugs.includes('seeds'));
    assert.ok(r.body.every((p: { snippet: string }) => typeof p.snippet === 'string'));
    assert.deepEqual((await s.request('GET', '/api/wiki?q=zzqqxx')).body, []);
  });

  it('names only commands that exist, in every page (the CLI reference is generated from them)', () => {
    const problems: string[] = [];
    const reference = page('cli-reference');
    const paths = [...reference.matchAll(/^## dp (.+)$/gm)].map((m) => m[1]!.split(' '));
    const top = new Set(paths.map((p) => p[0]));
    const help = runCli(['--help']);
    for (const m of help.stdout.matchAll(/^\s+dp ([a-z][\w-]*)/gm)) assert.ok(top.has(m[1]!), `dp ${m[1]} is missing from the CLI reference`);
    // The CLI reference is --help output itself; every other page is checked against it. A page
    // documenting a plugin this build does not ship (front matter `plugin`) cannot be checked.
    const installed = (slug: string) => {
      const plugin = /^plugin:\s*(\S+)$/m.exec(page(slug).split('\n---')[0]!)?.[1];
      return !plugin || fs.existsSync(path.join(REPO_ROOT, 'plugins', plugin, 'plugin.json'));
    };
    const unchecked = Object.keys(PAGES).filter((slug) => !installed(slug));
    if (unchecked.length) console.log(`wiki pages whose plugin this build does not ship (commands not checked): ${unchecked.join(', ')}`);
    for (const slug of Object.keys(PAGES).filter((p) => p !== 'cli-reference' && installed(p))) {
      for (const line of codeLines(page(slug))) {
        const w = words(line.trim());
        if (w[0] !== 'dp' || w.length < 2 || w[1]!.startsWith('-')) continue;
        const command = w[1]!;
        if (!top.has(command)) problems.push(`wiki/${slug}.md: 'dp ${command}' is no command`);
        const subs = paths.filter((p) => p[0] === command && p.length === 2).map((p) => p[1]);
        if (subs.length && w[2] && !w[2].startsWith('-') && !subs.includes(w[2])) problems.push(`wiki/${slug}.md: 'dp ${command} ${w[2]}' is no command`);
      }
    }
    assert.deepEqual(problems, []);
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

describe('wiki: the getting-started examples run as written', () => {
  after(closeInProcessClis);
  it('runs every dp command of the page in a copy of examples/shop', async () => {
    const lines = codeLines(page('getting-started'), ['bash']).map((l) => l.trim()).filter(Boolean);
    assert.ok(lines.length >= 8, 'the page lost its examples');
    const shop = copyShop();
    let cwd = path.dirname(shop);
    for (const line of lines) {
      const w = words(line);
      if (w[0] === 'cd') {
        assert.equal(w[1], 'examples/shop', 'the page changes into the example project');
        cwd = shop;
        continue;
      }
      assert.equal(w[0], 'dp', `not a dp command: ${line}`);
      if (w[1] === 'serve') {
        // The server runs until stopped (the real binary, which opens the file the commands above used): it must answer, then stop cleanly.
        await closeInProcessClis();
        const port = await freePort();
        // Without the scheduler: the example's hourly stream must not fire because the test crossed minute 15.
        const args = [...w.slice(1).map((a) => (a === '3000' ? String(port) : a)), '--no-scheduler'];
        const child = spawn(process.execPath, [DP_BIN, ...args], { cwd, env: { ...process.env, DP_LOG_SILENT: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
        try {
          await followOutput(child).waitFor(/dp listening on/, 120_000);
          const health = await fetch(`http://127.0.0.1:${port}/api/health`);
          assert.ok(health.ok, `${line}: the server did not answer`);
        } finally {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        }
        continue;
      }
      // Each command in this process (the same parsing and handler as the binary, on one App of the copy).
      const r = await runInProcess(w.slice(1), { cwd });
      assert.equal(r.code, 0, `${line}\n${r.stderr}`);
      assert.ok(r.stdout.length + r.stderr.length > 0, `${line} printed nothing`);
    }
    assert.ok(fs.readFileSync(path.join(shop, 'docs', 'project.md'), 'utf8').includes('### marts.customer_orders'));
  });
});
