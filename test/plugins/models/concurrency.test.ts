/**
 * How many independent models build at once: 4 in a one-shot command, whatever the machine's
 * cores (each build also waits on its commit); in `dp serve`, one per core between 2 and 4, so a
 * small machine keeps room for the queries it answers meanwhile.
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, describe, it } from 'node:test';
import { AFTER_MODEL_BUILD, type ModelsService } from '../../../sdk/index.js';
import type { App } from '../../../kernel/app.js';
import { defaultConcurrency } from '../../../plugins/models/transform.js';
import { bootApp, makeProject } from '../../helpers.js';

const INDEPENDENT = 6;

/**
 * The most builds of one forced run that were between their build and the end of their
 * afterModelBuild hook at the same time. The hook holds each build until `expected` of them are
 * inside (or 5 s passed, the failing case), so the count does not depend on how fast a build is.
 */
async function mostAtOnce(app: App, expected: number): Promise<number> {
  let inside = 0;
  let most = 0;
  let release!: () => void;
  const together = new Promise<void>((resolve) => (release = resolve));
  const bail = setTimeout(release, 5000);
  app.hookPoint(AFTER_MODEL_BUILD)!.tapPromise('test-together', async () => {
    inside++;
    most = Math.max(most, inside);
    if (inside >= expected) release();
    await together;
    inside--;
  });
  try {
    const run = await app.services.get<ModelsService>('models').transform({ force: true });
    assert.equal(run.status, 'success');
    assert.equal(run.results.length, INDEPENDENT);
  } finally {
    clearTimeout(bail);
  }
  return most;
}

describe('models built at once', () => {
  const apps: App[] = [];
  const project = () => makeProject(Object.fromEntries(Array.from({ length: INDEPENDENT }, (_, i) => [`transform/m${i}.sql`, `SELECT ${i} AS x`])));
  after(async () => {
    for (const app of apps) await app.close();
  });

  it('4 in a one-shot command, whatever the cores', async () => {
    const app = await bootApp(project());
    apps.push(app);
    assert.equal(await mostAtOnce(app, 4), 4);
  });

  it('one per core between 2 and 4 in dp serve', async () => {
    const app = await bootApp(project(), { serving: true });
    apps.push(app);
    const perCore = Math.max(2, Math.min(4, os.cpus().length));
    assert.equal(await mostAtOnce(app, perCore), perCore);
    // That no more than these start cannot be seen without waiting for a build that never comes: the bound itself.
    assert.equal(defaultConcurrency({ serving: true }), perCore);
    assert.equal(defaultConcurrency({ serving: false }), 4);
  });
});
