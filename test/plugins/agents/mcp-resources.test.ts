/**
 * MCP resources of the agents plugin (issue 20): the project's generated documentation and the
 * wiki pages, listed and read with the MCP SDK's own client over stdio (the real `dp mcp`) and
 * over streamable HTTP at /mcp (a real server with --auth, a viewer's token).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { builtShop, DP_BIN, REPO_ROOT, startServer, type TestServer } from '../../helpers.js';

const WIKI = path.join(REPO_ROOT, 'plugins', 'catalog', 'wiki');
const wikiSlugs = () => fs.readdirSync(WIKI).filter((f) => f.endsWith('.md')).map((f) => f.slice(0, -3)).sort();

/** What both transports must answer the same way. */
async function checkResources(client: Client): Promise<void> {
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  assert.ok(uris.includes('dp://docs/project'), uris.join(' '));
  assert.deepEqual(uris.filter((u) => u.startsWith('dp://wiki/')).map((u) => u.slice('dp://wiki/'.length)).sort(), wikiSlugs(), 'every wiki page is listed');
  for (const r of resources) assert.equal(r.mimeType, 'text/markdown');
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['dp://wiki/{slug}']);

  const docs = await client.readResource({ uri: 'dp://docs/project' });
  const text = docs.contents.map((c) => ('text' in c ? c.text : '')).join('');
  for (const model of ['marts.customer_orders', 'marts.revenue_by_month', 'staging.stg_orders']) assert.ok(text.includes(model), `the docs name ${model}`);

  const page = await client.readResource({ uri: 'dp://wiki/getting-started' });
  const pageText = page.contents.map((c) => ('text' in c ? c.text : '')).join('');
  const source = fs.readFileSync(path.join(WIKI, 'getting-started.md'), 'utf8');
  const firstBodyLine = source.replace(/^---[\s\S]*?---\s*/, '').split('\n').find((l) => l.trim())!;
  assert.ok(pageText.includes(firstBodyLine), 'the page is the wiki file without its front matter');
  assert.ok(!pageText.startsWith('---'));

  await assert.rejects(client.readResource({ uri: 'dp://wiki/no-such-page' }), /wiki page|not found/i);
}

describe('MCP resources over stdio (dp mcp)', () => {
  let project: string;
  before(async () => {
    project = await builtShop();
  });

  it('lists and reads the project docs and every wiki page', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [DP_BIN, 'mcp', '--project', project, '--read-only'],
      env: { ...(process.env as Record<string, string>), DP_LOG_SILENT: '1' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await checkResources(client);
    } finally {
      await client.close();
    }
  });
});

describe('MCP resources over streamable HTTP (/mcp, --auth)', () => {
  let s: TestServer;
  let viewer: string;
  let project: string;
  before(async () => {
    project = await builtShop();
    s = await startServer(project, { auth: true });
    const admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'rootpw', role: 'admin' })).body.token;
    assert.ok((await s.request('POST', '/api/users', { username: 'vera', password: 'verapw', role: 'viewer' }, { token: admin })).status < 300);
    viewer = (await s.request('POST', '/api/auth/login', { username: 'vera', password: 'verapw' })).body.token;
  });
  after(async () => s.close());

  it("a viewer lists and reads them with the viewer's token", async () => {
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${viewer}` } } }));
    try {
      await checkResources(client);
    } finally {
      await client.close();
    }
  });

  it('a changed project.yml is seen by the next request (servers are kept between requests)', async () => {
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${viewer}` } } }));
    try {
      const docsTitle = async () => (await client.listResources()).resources.find((r) => r.uri === 'dp://docs/project')?.title;
      assert.match((await docsTitle()) ?? '', /'shop'/);
      const file = path.join(project, 'project.yml');
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace(/^name: shop$/m, 'name: renamed_shop'));
      assert.match((await docsTitle()) ?? '', /'renamed_shop'/);
    } finally {
      await client.close();
    }
  });

  it('refuses resources/list without a token', async () => {
    const raw = await s.request('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'resources/list' }, { headers: { accept: 'application/json, text/event-stream' } });
    assert.equal(raw.status, 401);
  });
});
