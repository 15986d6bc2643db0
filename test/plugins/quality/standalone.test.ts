import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, REPO_ROOT, startServer, type TestServer } from '../../helpers.js';
import { AFTER_MODEL_BUILD } from '../../../sdk/index.js';

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
    // The build hook points belong to models: with it disabled nothing can fire them (no build
    // runs), so quality's per-build records stay empty and its routes answer with nothing recorded.
    assert.equal(s.app.hookPoint(AFTER_MODEL_BUILD), undefined);
    const assertions = await s.request('GET', '/api/assertions/m.t');
    assert.equal(assertions.status, 200, assertions.text);
    assert.deepEqual(assertions.body.results, []);
    const profiles = await s.request('GET', '/api/profiles');
    assert.equal(profiles.status, 200, profiles.text);
    assert.deepEqual(profiles.body.profiles, []);
    const fresh = await s.request('GET', '/api/freshness');
    assert.equal(fresh.status, 200, fresh.text);
    assert.deepEqual(fresh.body.models, []);
    const transform = await s.request('POST', '/api/transform', {});
    assert.equal(transform.status, 404, 'the models routes are gone');
  });
});
