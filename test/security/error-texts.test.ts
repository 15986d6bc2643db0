/**
 * Error texts quote the values they failed on (`Could not convert string 'ada@example.com' to
 * INT32`): issue 28 point 3 and issue 33 point 6. A caller bound by a masking policy reads them
 * redacted on every outlet (run history, both event streams, transform runs and results, MCP
 * tools, alerts, notebook outputs), identifiers kept; the exempt admin reads them raw.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { redactErrorValues } from '../../sdk/index.js';
import { makeProject } from '../helpers.js';
import { startServerWithRoles, type RoleServer } from '../support/role-server.js';

const EMAILS = ['ada@example.com', 'bob@example.com'];

/** Every event an SSE route holds, replayed from the start (Last-Event-ID no longer held). */
async function replayEvents(url: string, token: string, until: RegExp): Promise<string> {
  const controller = new AbortController();
  let text = '';
  try {
    const res = await fetch(url, { signal: controller.signal, headers: { authorization: `Bearer ${token}`, 'last-event-id': '0' } });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    while (!until.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
  } finally {
    controller.abort();
  }
  return text;
}

describe('security: one redaction of values in error texts', () => {
  let r: RoleServer;
  const as = (role: 'admin' | 'editor' | 'viewer', method: string, url: string, body?: unknown) => r.s.request(method, url, body, { token: r.tokens[role] });
  const noValues = (text: string, where: string) => {
    for (const v of EMAILS) assert.ok(!text.includes(v), `${where} shows the masked value '${v}': ${text.slice(0, 600)}`);
  };

  before(async () => {
    const root = makeProject({
      'project.yml': [
        'name: errtexts',
        'streams:',
        '  nightly:',
        '    steps:',
        '      - transform: [marts.bad]',
        '  scripted:',
        '    steps:',
        '      - ingest: [leaky]',
        'alerts:',
        '  channels: [log]',
        '  on_failure: true',
      ].join('\n'),
      'seeds/people.csv': `id,name,email\n1,Ada,${EMAILS[0]}\n2,Bob,${EMAILS[1]}\n`,
      'transform/marts/bad.sql': 'SELECT CAST(email AS INTEGER) AS n FROM seeds.people',
      'transform/marts/typo.sql': 'SELECT nme FROM seeds.people',
      'ingest/leaky.ts': "export default async (ctx: any) => { await ctx.db.all('SELECT CAST(email AS INTEGER) FROM seeds.people'); };\n",
      'notebooks/saved.dpnb': JSON.stringify({
        cells: [{ type: 'sql', source: 'SELECT 1', outputs: [{ error: `Conversion Error: Could not convert string '${EMAILS[0]}' to INT32` }] }],
      }),
    });
    r = await startServerWithRoles(root);
    assert.equal((await as('admin', 'POST', '/api/seeds', {})).status, 200);
    const policy = await as('admin', 'POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'people', column_name: 'email', method: 'redact' });
    assert.equal(policy.status, 201, policy.text);
    const nightly = await as('admin', 'POST', '/api/stream/nightly', {});
    assert.equal(nightly.body.status, 'error', nightly.text);
    assert.match(nightly.text, /ada@example\.com|bob@example\.com/, 'the admin (exempt) reads the raw error');
    assert.equal((await as('admin', 'POST', '/api/stream/scripted', {})).body.status, 'error');
    await as('admin', 'POST', '/api/transform', { targets: ['marts.typo'] });
    await r.s.app.services.get<{ drainAlerts(): Promise<void> }>('quality').drainAlerts();
  });
  after(async () => r?.s.close());

  it('redacts values and keeps identifiers (one function)', () => {
    assert.equal(redactErrorValues(`Conversion Error: Could not convert string '${EMAILS[0]}' to INT32`), "Conversion Error: Could not convert string '***' to INT32");
    const binder = 'Binder Error: Referenced column "nme" not found in FROM clause!\nCandidate bindings: "name", "email"';
    assert.equal(redactErrorValues(binder), binder);
    assert.equal(redactErrorValues('Constraint Error: Duplicate key "id: 5" violates primary key constraint'), 'Constraint Error: Duplicate key "***" violates primary key constraint');
    assert.equal(redactErrorValues('Could not parse string "ada" according to format specifier "%Y"'), 'Could not parse string "***" according to format specifier "***"');
    assert.equal(redactErrorValues("model's build failed: can't cast 'o'brien' here"), "model's build failed: can't cast '***' here");
    assert.equal(redactErrorValues('Type INT64 with value 3000000000 can\'t be cast'), "Type INT64 with value *** can't be cast");
    assert.equal(redactErrorValues("unterminated 'ada@example.com"), "unterminated '***");
  });

  it('GET /api/history, /api/stream/active and POST /api/stream/{name}: a viewer reads no value, the admin does', async () => {
    const viewer = await as('viewer', 'GET', '/api/history');
    assert.equal(viewer.status, 200);
    assert.ok(viewer.body.runs.length >= 2);
    assert.ok(viewer.body.runs.every((run: { error: string | null }) => run.error), viewer.text);
    noValues(viewer.text, '/api/history (viewer)');
    assert.match(viewer.text, /\*\*\*/);
    assert.match((await as('admin', 'GET', '/api/history')).text, /ada@example\.com|bob@example\.com/);
    noValues((await as('viewer', 'GET', '/api/stream/active')).text, '/api/stream/active');
    const editorRun = await as('editor', 'POST', '/api/stream/nightly', {});
    assert.equal(editorRun.body.status, 'error');
    noValues(editorRun.text, 'POST /api/stream/nightly (editor)');
  });

  it('the SSE streams /api/stream/events and /api/transform/events', async () => {
    const stream = await replayEvents(`${r.s.url}/api/stream/events`, r.tokens.viewer, /event: (complete|error)\n[^\n]*\n\n[\s\S]*event: (complete|error)\n/);
    assert.match(stream, /event: (error|complete)/);
    noValues(stream, '/api/stream/events');
    const transform = await replayEvents(`${r.s.url}/api/transform/events`, r.tokens.viewer, /event: transform_end/);
    assert.match(transform, /model_end/);
    noValues(transform, '/api/transform/events');
    assert.match(await replayEvents(`${r.s.url}/api/transform/events`, r.tokens.admin, /ada@example\.com|bob@example\.com/), /ada@example\.com|bob@example\.com/);
  });

  it('GET /api/transform/runs and POST /api/transform drop values and keep identifiers', async () => {
    const runs = await as('viewer', 'GET', '/api/transform/runs');
    noValues(runs.text, '/api/transform/runs');
    const built = await as('editor', 'POST', '/api/transform', { targets: ['marts.bad'], force: true });
    assert.equal(built.status, 200);
    noValues(built.text, 'POST /api/transform (editor)');
    const typo = await as('editor', 'POST', '/api/transform', { targets: ['marts.typo'], force: true });
    assert.match(typo.text, /\\"nme\\"/, `the identifier of a binder error stays: ${typo.text.slice(0, 400)}`);
  });

  it("MCP's run_history tool", async () => {
    const client = new Client({ name: 'dp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${r.s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${r.tokens.viewer}` } } }));
    try {
      const answer = (await client.callTool({ name: 'run_history', arguments: {} })) as { content: Array<{ text: string }> };
      const text = answer.content.map((c) => c.text).join('');
      assert.match(text, /error/);
      noValues(text, 'MCP run_history');
    } finally {
      await client.close();
    }
  });

  it('/api/alerts keeps identifiers (column "nme"), drops values', async () => {
    const alerts = await as('viewer', 'GET', '/api/alerts');
    assert.equal(alerts.status, 200);
    noValues(alerts.text, '/api/alerts');
    assert.match(alerts.text, /nme/, `an identifier is not a value: ${alerts.text.slice(0, 400)}`);
    assert.ok(!/column \\?"\*\*\*\\?"/.test(alerts.text), alerts.text.slice(0, 400));
  });

  it("a notebook's saved outputs", async () => {
    const nb = await as('viewer', 'GET', '/api/notebooks/notebooks/saved.dpnb');
    assert.equal(nb.status, 200, nb.text);
    noValues(nb.text, 'GET notebook');
    assert.match((await as('admin', 'GET', '/api/notebooks/notebooks/saved.dpnb')).text, /ada@example\.com/);
  });
});
