/**
 * The MCP server's tools and resources come from the plugins that own them (the `agents.mcp`
 * extension point): with lineage, semantic and catalog disabled in project.yml, their tools and
 * resources are absent, and what the enabled plugins contribute is still offered and works.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { copyShop, startServer, type TestServer } from '../../helpers.js';

describe('MCP tools of disabled plugins', () => {
  let s: TestServer;
  before(async () => {
    const project = copyShop();
    fs.appendFileSync(path.join(project, 'project.yml'), '\nplugins:\n  disable: [lineage, semantic, catalog]\n');
    s = await startServer(project);
  });
  after(async () => s.close());

  it('are not offered; the enabled plugins still contribute theirs', async () => {
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`)));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['check', 'describe_table', 'get_model', 'list_models', 'list_tables', 'query', 'run_history', 'run_transform']);
      for (const gone of ['model_lineage', 'impact', 'list_metrics', 'query_metric']) assert.ok(!names.includes(gone), `${gone} is offered without its plugin`);
      const called = await client.callTool({ name: 'model_lineage', arguments: { name: 'marts.customer_orders' } });
      assert.equal(called.isError, true, 'a tool of a disabled plugin cannot be called');

      const listed = (await client.callTool({ name: 'list_models', arguments: {} })) as { content: Array<{ text: string }> };
      assert.ok(JSON.parse(listed.content[0]!.text).models.some((m: { name: string }) => m.name === 'marts.customer_orders'));

      // The catalog offered the resources: without it the server has none.
      await assert.rejects(client.listResources(), /Method not found/i);
    } finally {
      await client.close();
    }
  });
});
