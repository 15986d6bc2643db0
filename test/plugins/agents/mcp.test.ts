/**
 * The MCP server driven by the MCP SDK's own client: over stdio against the real `dp mcp` binary
 * on a built copy of examples/shop, and over streamable HTTP at /mcp on a real server with
 * --auth (a viewer's query is masked, a viewer gets no run_transform and cannot call it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { builtShop, DP_BIN, startServer, type TestServer } from '../../helpers.js';

interface ToolAnswer {
  isError?: boolean;
  content: Array<{ type: string; text: string }>;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ isError: boolean; body: any; text: string }> {
  const r = (await client.callTool({ name, arguments: args })) as ToolAnswer;
  const text = r.content.map((c) => c.text).join('');
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { isError: Boolean(r.isError), body, text };
}

const ALL_TOOLS = ['check', 'describe_table', 'get_model', 'impact', 'list_metrics', 'list_models', 'list_tables', 'model_lineage', 'query', 'query_metric', 'run_history', 'run_transform'];

describe('dp mcp over stdio (the real binary)', () => {
  let project: string;
  before(async () => {
    project = await builtShop();
  });

  async function connect(extra: string[] = []): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [DP_BIN, 'mcp', '--project', project, ...extra],
      env: { ...(process.env as Record<string, string>), DP_LOG_SILENT: '1' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }

  it('drives every tool', async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ALL_TOOLS);
      for (const t of tools) {
        assert.ok((t.description ?? '').length > 60, `${t.name} has an agent-oriented description`);
        assert.equal(t.inputSchema.type, 'object');
      }
      const query = tools.find((t) => t.name === 'query')!;
      assert.deepEqual(query.inputSchema.required, ['sql']);

      const q = await call(client, 'query', { sql: 'SELECT count(*) AS n FROM marts.customer_orders' });
      assert.equal(q.isError, false, q.text);
      assert.deepEqual(q.body.columns, ['n']);
      assert.ok(Number(q.body.rows[0][0]) >= 10);

      const capped = await call(client, 'query', { sql: 'SELECT * FROM range(500)', limit: 5 });
      assert.equal(capped.body.rows.length, 5);
      assert.equal(capped.body.truncated, true);
      assert.match(capped.body.note, /first 5/);

      const write = await call(client, 'query', { sql: 'DROP TABLE marts.customer_orders' });
      assert.equal(write.isError, true);
      assert.ok(write.body.error.code, write.text);
      assert.doesNotMatch(write.text, /\n\s+at /, 'no stack trace');

      const tables = await call(client, 'list_tables', { schema: 'marts' });
      assert.deepEqual(tables.body.tables.map((t: any) => t.name).sort(), ['customer_orders', 'revenue_by_month']);

      const described = await call(client, 'describe_table', { table: 'marts.customer_orders' });
      assert.equal(described.body.row_count, Number(q.body.rows[0][0]));
      assert.ok(described.body.columns.some((c: any) => c.name === 'email' && c.type === 'VARCHAR'));
      const missing = await call(client, 'describe_table', { table: 'marts.nope' });
      assert.equal(missing.isError, true);
      assert.equal(missing.body.error.code, 'table_not_found');

      const models = await call(client, 'list_models');
      assert.deepEqual(models.body.models.map((m: any) => m.name).sort(), [
        'marts.customer_orders',
        'marts.revenue_by_month',
        'staging.stg_customers',
        'staging.stg_orders',
        'staging.stg_payments',
      ]);

      const model = await call(client, 'get_model', { name: 'customer_orders' });
      assert.equal(model.body.name, 'marts.customer_orders');
      assert.match(model.body.sql, /order_totals/);
      assert.equal(model.body.built, true);
      assert.equal((await call(client, 'get_model', { name: 'nope' })).body.error.code, 'model_not_found');

      const lineage = await call(client, 'model_lineage', { name: 'marts.customer_orders' });
      assert.deepEqual(lineage.body.columns.email, [{ source_table: 'staging.stg_customers', source_column: 'email' }]);

      const impact = await call(client, 'impact', { name: 'staging.stg_orders', column: 'amount' });
      assert.ok(impact.body.downstream_models.includes('marts.customer_orders'));
      assert.ok(impact.body.affected_columns.some((c: any) => c.model === 'marts.customer_orders' && c.column === 'lifetime_value'));

      const metrics = await call(client, 'list_metrics');
      assert.ok(metrics.body.metrics.some((m: any) => m.name === 'total_revenue' && m.dimensions.includes('payment_method')), metrics.text);
      const revenue = await call(client, 'query_metric', { metric: 'total_revenue', dimensions: ['payment_method'] });
      assert.equal(revenue.isError, false, revenue.text);
      assert.ok(revenue.body.rows.length > 0);
      assert.ok(revenue.body.columns.includes('payment_method'));
      const badMetric = await call(client, 'query_metric', { metric: 'nope' });
      assert.equal(badMetric.isError, true);

      const history = await call(client, 'run_history');
      assert.equal(history.isError, false, history.text);
      assert.ok(Array.isArray(history.body.runs));

      const check = await call(client, 'check');
      assert.equal(check.isError, false, check.text);
      assert.ok(['pass', 'fail'].includes(check.body.status));
      assert.equal(check.body.validation.failed, 0);

      const built = await call(client, 'run_transform', { models: ['staging.stg_orders'], force: true });
      assert.equal(built.body.status, 'success', built.text);
      assert.equal(built.body.results[0].model, 'staging.stg_orders');
      assert.notEqual(built.body.results[0].status, 'error');
    } finally {
      await client.close();
    }
  });

  it('--read-only offers no tool that changes anything and refuses masking commands', async () => {
    const client = await connect(['--read-only']);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('run_transform'));
      assert.ok(!names.includes('check'));
      assert.ok(names.includes('query'));
      const refused = await call(client, 'run_transform', {});
      assert.equal(refused.isError, true);
      const mask = await call(client, 'query', { sql: 'CREATE MASKING POLICY ON marts.customer_orders.email METHOD redact' });
      assert.equal(mask.isError, true);
      assert.equal(mask.body.error.code, 'mcp_read_only');
      const still = await call(client, 'query', { sql: 'SHOW MASKING POLICIES' });
      assert.equal(still.body.rows.length, 0, 'no policy was created');
    } finally {
      await client.close();
    }
  });
});

describe('MCP over streamable HTTP at /mcp (--auth)', () => {
  let s: TestServer;
  let admin: string;
  let viewer: string;
  before(async () => {
    s = await startServer(await builtShop(), { auth: true });
    admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'rootpw', role: 'admin' })).body.token;
    assert.ok((await s.request('POST', '/api/users', { username: 'vera', password: 'verapw', role: 'viewer' }, { token: admin })).status < 300);
    viewer = (await s.request('POST', '/api/auth/login', { username: 'vera', password: 'verapw' })).body.token;
    const policy = await s.request('POST', '/api/masking/policies', { schema_name: 'marts', table_name: 'customer_orders', column_name: 'email', method: 'redact', method_config: {} }, { token: admin });
    assert.ok(policy.status < 300, policy.text);
  });
  after(async () => s.close());

  async function connect(token: string | null): Promise<Client> {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers } }));
    return client;
  }

  it('refuses a caller without a token', async () => {
    await assert.rejects(connect(null));
    const raw = await s.request('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(raw.status, 401);
    assert.equal(raw.body.error.code.length > 0, true);
    const notAcceptable = await s.request('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { token: admin, headers: { accept: 'application/json' } });
    assert.equal(notAcceptable.status, 406);
    assert.equal(notAcceptable.body.error.code, 'mcp_not_acceptable');
    const notRpc = await s.request('POST', '/mcp', { hello: 1 }, { token: admin, headers: { accept: 'application/json, text/event-stream' } });
    assert.equal(notRpc.status, 400);
    assert.equal(notRpc.body.error.code, 'mcp_invalid_message');
  });

  it("a viewer's query is masked, and run_transform is neither listed nor callable", async () => {
    const client = await connect(viewer);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('run_transform'));
      assert.ok(!names.includes('check'));
      assert.ok(names.includes('query') && names.includes('describe_table'));

      const q = await call(client, 'query', { sql: 'SELECT email FROM marts.customer_orders ORDER BY customer_id LIMIT 3' });
      assert.equal(q.isError, false, q.text);
      for (const [email] of q.body.rows) assert.doesNotMatch(String(email), /@/);
      assert.doesNotMatch(q.text, /ada@example\.com/);

      const described = await call(client, 'describe_table', { schema: 'marts', table: 'customer_orders' });
      assert.deepEqual(described.body.columns.filter((c: any) => c.masked).map((c: any) => c.name), ['email']);

      const refused = await call(client, 'run_transform', {});
      assert.equal(refused.isError, true);
      const hidden = await call(client, 'query', { sql: 'SELECT * FROM _service.run_history' });
      assert.equal(hidden.isError, true);
    } finally {
      await client.close();
    }
  });

  it('a server kept between requests serves only its own caller', async () => {
    // Servers are kept per caller (plugins/agents/server-pool.ts): calls of both roles, at once and
    // one after another, each get their own role's tools and masking.
    const [asViewer, asAdmin] = await Promise.all([connect(viewer), connect(admin)]);
    try {
      const sql = 'SELECT email FROM marts.customer_orders WHERE customer_id = 1';
      for (let round = 0; round < 3; round++) {
        const [v, a, vTools, aTools] = await Promise.all([call(asViewer, 'query', { sql }), call(asAdmin, 'query', { sql }), asViewer.listTools(), asAdmin.listTools()]);
        assert.doesNotMatch(v.text, /ada@example\.com/, `round ${round}: the viewer's query is masked`);
        assert.deepEqual(a.body.rows, [['ada@example.com']], `round ${round}: the admin's is not`);
        assert.ok(!vTools.tools.some((t) => t.name === 'run_transform'));
        assert.deepEqual(aTools.tools.map((t) => t.name).sort(), ALL_TOOLS);
        assert.equal((await call(asViewer, 'run_transform', {})).isError, true);
      }
    } finally {
      await Promise.all([asViewer.close(), asAdmin.close()]);
    }
  });

  it("an admin sees the raw value and gets run_transform", async () => {
    const client = await connect(admin);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ALL_TOOLS);
      const q = await call(client, 'query', { sql: 'SELECT email FROM marts.customer_orders WHERE customer_id = 1' });
      assert.deepEqual(q.body.rows, [['ada@example.com']]);
      const built = await call(client, 'run_transform', { models: ['marts.revenue_by_month'] });
      assert.equal(built.isError, false, built.text);
      assert.equal(built.body.status, 'success');
    } finally {
      await client.close();
    }
  });
});
