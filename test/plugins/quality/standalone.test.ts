import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, REPO_ROOT, startServer, type TestServer } from '../../helpers.js';
import { fireBuild, fireTransformEnd } from './util.js';

/** `models` and every built-in plugin that (transitively) requires it. */
function modelsAndDependents(): string[] {
  const dir = path.join(REPO_ROOT, 'plugins');
  const requires = new Map<string, string[]>();
  for (const name of fs.readdirSync(dir)) {
    const manifest = path.join(dir, name, 'plugin.json');
    if (fs.existsSync(manifest)) {
      const m = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name: string; requires?: string[] };
      requires.set(m.name, m.requires ?? []);
    }
  }
  const out = new Set(['models']);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [name, reqs] of requires) {
      if (!out.has(name) && reqs.some((r) => out.has(r))) {
        out.add(name);
        grew = true;
      }
    }
  }
  assert.ok(!out.has('quality'), 'quality must not require models');
  return [...out];
}

describe('quality: with the models plugin disabled', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(
      makeProject({
        'project.yml': `name: solo\ndatabase:\n  path: solo.duckdb\nplugins:\n  disable: [${modelsAndDependents().join(', ')}]\n`,
        'contracts/solo.yml': 'contracts:\n  - model: m.t\n    assertions: [row_count = 3, unique(id)]\n',
      }),
    );
    await s.app.db.run('CREATE SCHEMA m; CREATE TABLE m.t AS SELECT * FROM range(3) r(id)');
  });
  after(async () => s.close());

  it('boots, and serves contracts, assertions, profiles and freshness on its own', async () => {
    assert.equal(s.app.services.find('models'), undefined);
    const run = await s.request('POST', '/api/contracts/run');
    assert.equal(run.status, 200, run.text);
    assert.deepEqual([run.body.total, run.body.passed], [1, 1]);
    const b = await fireBuild(s.app, 'm.t', 'solo-1', ['row_count = 3']);
    assert.equal(b.status, 'built');
    await fireTransformEnd(s.app, 'solo-1', [{ model: 'm.t', status: 'built' }]);
    const assertions = await s.request('GET', '/api/assertions/m.t');
    assert.equal(assertions.body.results.length, 1);
    const profiles = await s.request('GET', '/api/profiles');
    assert.deepEqual(
      profiles.body.profiles.map((p: { model: string; row_count: number }) => [p.model, p.row_count]),
      [['m.t', 3]],
    );
    const fresh = await s.request('GET', '/api/freshness');
    assert.equal(fresh.body.models[0].status, 'fresh');
    const transform = await s.request('POST', '/api/transform', {});
    assert.equal(transform.status, 404, 'the models routes are gone');
  });
});
