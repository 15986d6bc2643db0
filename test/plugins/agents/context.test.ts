/**
 * `dp context` on a built copy of examples/shop: every model, source, contract and metric is
 * named, masking is described in words, and no secret or raw masked value appears.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { builtShop, closeInProcessClis, REPO_ROOT, runInProcess } from '../../helpers.js';

after(closeInProcessClis);

const SECRET = 'sk_live_ctx_9f8e7d6c5b4a';

describe('dp context', () => {
  let project: string;
  before(async () => {
    project = await builtShop({ '.env': `CRM_API_TOKEN=${SECRET}\n` });
    const policy = await runInProcess(['query', "CREATE MASKING POLICY ON marts.customer_orders.email METHOD partial CONFIG '{\"show_first\": 2}' EXEMPT admin", '--project', project]);
    assert.equal(policy.code, 0, policy.stderr);
  });

  it('writes AGENTS.md naming every model, with lineage, sources, contracts, metrics, masking in words and commands', async () => {
    const r = await runInProcess(['context', '--out', 'AGENTS.md', '--project', project]);
    assert.equal(r.code, 0, r.stderr);
    const text = fs.readFileSync(path.join(project, 'AGENTS.md'), 'utf8');
    for (const model of ['staging.stg_customers', 'staging.stg_orders', 'staging.stg_payments', 'marts.customer_orders', 'marts.revenue_by_month']) {
      assert.match(text, new RegExp(`### ${model.replace('.', '\\.')}\\n`), `names ${model}`);
    }
    // Column lineage with types from the built warehouse.
    assert.match(text, /\| email \| VARCHAR \| staging\.stg_customers\.email \|/);
    assert.match(text, /`landing\.events`: One row per page view/);
    assert.match(text, /`customer_orders_contract` on `marts\.customer_orders`/);
    assert.match(text, /`total_revenue`: Revenue from completed and shipped orders/);
    assert.match(text, /## Masking\n\n.*\n\n- `marts\.customer_orders\.email`: partial method; exempt: admin/);
    // The streams plugin's section (agents.context): steps and schedule.
    assert.match(text, /## Streams\n\n- `daily` \(cron `0 6 \* \* \*`\): ingest events/);
    assert.match(text, /`dp transform/);
    assert.match(text, /`crm_api`: rest_api/);

    // No secret, no data value of the masked column, no masking configuration.
    assert.ok(!text.includes(SECRET));
    assert.ok(!text.includes('${CRM_API_TOKEN}'));
    const emails = fs.readFileSync(path.join(project, 'seeds', 'customers.csv'), 'utf8').match(/[\w.+-]+@[\w.-]+/g) ?? [];
    assert.ok(emails.length > 0);
    for (const email of emails) assert.ok(!text.includes(email), `no raw email ${email}`);
    assert.ok(!text.includes('show_first'));
  });

  it('names no plugin it describes: with lineage, masking and streams disabled their sections are simply absent', async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'plugins', 'agents', 'plugin.json'), 'utf8')) as { optional?: string[] };
    assert.deepEqual(manifest.optional ?? [], [], 'agents lists no optional plugin: features contribute to agents.context');
    const yml = path.join(project, 'project.yml');
    const original = fs.readFileSync(yml, 'utf8');
    // A new App reads the changed project.yml, as a new process would.
    await closeInProcessClis();
    fs.writeFileSync(yml, `${original}\nplugins:\n  disable: [lineage, masking, streams]\n`);
    try {
      const r = await runInProcess(['context', '--project', project]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /### marts\.customer_orders\n/);
      // Columns and types from the built warehouse, without lineage's "from".
      assert.match(r.stdout, /\| email \| VARCHAR \| {2}\|/);
      assert.doesNotMatch(r.stdout, /## Masking|## Streams|staging\.stg_customers\.email/);
      assert.match(r.stdout, /## Commands/);
    } finally {
      await closeInProcessClis();
      fs.writeFileSync(yml, original);
    }
  });

  it('prints to stdout without --out and refuses a path outside the project', async () => {
    const r = await runInProcess(['context', '--project', project]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# shop\n/);
    const out = await runInProcess(['context', '--out', '../escape.md', '--project', project]);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /outside/);
    assert.ok(!fs.existsSync(path.join(project, '..', 'escape.md')));
  });
});
