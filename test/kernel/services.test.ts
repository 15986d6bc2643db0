import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DpError } from '../../sdk/errors.js';
import { QUERY_PURPOSES } from '../../sdk/hooks.js';
import { LOCAL_ADMIN } from '../../sdk/auth.js';
import { copyShop, startServer } from '../helpers.js';
import { boot, projectWith, type TestPlugin } from './seams.js';

const PROVIDER: TestPlugin = {
  name: 'provider',
  manifest: { contributes: { services: ['clock'], extensionPoints: ['provider.kinds'] } },
  setup: `const kinds = []; ctx.provideExtensionPoint('provider.kinds', (k, from) => kinds.push(from + ':' + k));
    ctx.services.provide('clock', { now: () => 42, kinds: () => kinds });`,
};

function consumer(manifest: Record<string, unknown>, setup: string): TestPlugin {
  return { name: 'consumer', manifest: { ...manifest, contributes: { services: ['consumer'], ...((manifest.contributes as object) ?? {}) } }, setup };
}

describe('typed services, optional plugins and extension points', () => {
  it('refuses a lookup of a service whose plugin is neither required nor optional, naming both plugins', async () => {
    const root = projectWith([PROVIDER, consumer({}, `ctx.services.find('clock');`)]);
    await assert.rejects(boot(root), (e: DpError) => {
      assert.equal(e.code, 'undeclared_dependency');
      assert.match(e.message, /Plugin 'consumer' uses service 'clock' of plugin 'provider' without listing 'provider' under requires or optional/);
      return true;
    });
  });

  it('an optional plugin that is absent or disabled gives undefined from find() and a clear error from get()', async () => {
    const setup = `ctx.services.provide('consumer', { find: () => ctx.services.find('clock'), get: () => ctx.services.get('clock') });`;
    const app = await boot(projectWith([PROVIDER, consumer({ optional: ['provider'] }, setup)], '  disable: [provider]\n'));
    try {
      const svc = app.services.get<{ find(): unknown; get(): unknown }>('consumer');
      assert.equal(svc.find(), undefined);
      assert.throws(() => svc.get(), (e: DpError) => e.code === 'service_unavailable' && /plugin 'provider' is disabled/.test(e.message));
    } finally {
      await app.close();
    }
    const present = await boot(projectWith([PROVIDER, consumer({ optional: ['provider'] }, setup)]));
    try {
      assert.equal(present.services.get<{ find(): { now(): number } }>('consumer').find().now(), 42);
    } finally {
      await present.close();
    }
  });

  it('an optional plugin sets up first, so its extension point takes contributions', async () => {
    const extender = consumer({ optional: ['provider'], contributes: { extends: ['provider.kinds'] } }, `ctx.extend('provider.kinds', 'x');`);
    // 'consumer' sorts before 'provider': only the optional dependency orders them.
    const app = await boot(projectWith([PROVIDER, extender]));
    try {
      assert.deepEqual(app.services.get<{ kinds(): string[] }>('clock').kinds(), ['consumer:x']);
    } finally {
      await app.close();
    }
  });

  it('holds a contribution that arrives before its owner offers the point (no dependency needed)', async () => {
    // 'consumer' sorts before 'provider' and does not depend on it: it sets up first.
    const early = consumer({ contributes: { extends: ['provider.kinds'] } }, `ctx.extend('provider.kinds', 'early');`);
    const app = await boot(projectWith([PROVIDER, early]));
    try {
      assert.deepEqual(app.services.get<{ kinds(): string[] }>('clock').kinds(), ['consumer:early']);
    } finally {
      await app.close();
    }
  });

  it('checks extends: declared, offered by an installed plugin, before setup ends', async () => {
    const undeclared = consumer({ requires: ['provider'] }, `ctx.extend('provider.kinds', 'x');`);
    await assert.rejects(boot(projectWith([PROVIDER, undeclared])), (e: DpError) => e.code === 'undeclared_extension' && /'consumer' extends 'provider\.kinds' without declaring it/.test(e.message));
    const unknown = consumer({ requires: ['provider'], contributes: { extends: ['provider.colours'] } }, '');
    await assert.rejects(boot(projectWith([PROVIDER, unknown])), /contributes\.extends lists 'provider\.colours', which no installed plugin declares/);
    const late = consumer({ requires: ['provider'], contributes: { extends: ['provider.kinds'] } }, `ctx.onStart(() => ctx.extend('provider.kinds', 'late'));`);
    const app = await boot(projectWith([PROVIDER, late]));
    try {
      await assert.rejects(app.start(), (e: DpError) => e.code === 'extension_point_closed' && /'consumer' extends 'provider\.kinds' after setup/.test(e.message));
    } finally {
      await app.close();
    }
  });

  it('refuses a second provider of a service', async () => {
    const twin: TestPlugin = { name: 'twin', manifest: { contributes: { services: ['clock'] } }, setup: `ctx.services.provide('clock', {});` };
    await assert.rejects(boot(projectWith([PROVIDER, twin])), (e: DpError) => e.code === 'duplicate_service' && /'clock'/.test(e.message) && /provider/.test(e.message) && /twin/.test(e.message));
  });

  it('models offers models.checks and models.view: quality and lineage extend them, models looks nothing up', async () => {
    const root = copyShop();
    const s = await startServer(root);
    try {
      await s.app.services.get<{ loadSeeds(o: object): Promise<unknown> }>('models').loadSeeds({});
      await s.app.services.get<{ transform(o: object): Promise<unknown> }>('models').transform({});
      const check = await s.request('POST', '/api/check', {});
      assert.equal(check.body.assertions.evaluated, true, 'the quality plugin checks through models.checks');
      const models = await s.request('GET', '/api/models');
      const name = models.body[0].full_name ?? `${models.body[0].schema}.${models.body[0].name}`;
      const view = await s.request('GET', `/api/models/${name}/notebook-view`);
      assert.equal(typeof view.body.lineage?.columns, 'object', 'the lineage plugin fills the lineage section');
      assert.equal(view.body.lineage_error, null);
    } finally {
      await s.close();
    }
    const trimmed = copyShop({ 'project.yml': `${(await import('node:fs')).readFileSync(`${root}/project.yml`, 'utf8')}\nplugins:\n  disable: [quality, lineage]\n` });
    const t = await startServer(trimmed);
    try {
      const check = await t.request('POST', '/api/check', {});
      assert.equal(check.body.assertions.evaluated, false);
      const models = await t.request('GET', '/api/models');
      const name = models.body[0].full_name ?? `${models.body[0].schema}.${models.body[0].name}`;
      const view = await t.request('GET', `/api/models/${name}/notebook-view`);
      assert.equal(view.body.lineage, null);
      assert.match(view.body.lineage_error, /lineage plugin is disabled/);
    } finally {
      await t.close();
    }
  });

  it('QueryPurpose is an open string: a plugin names its own purpose', async () => {
    assert.equal(QUERY_PURPOSES.sample, 'sample');
    const tapper: TestPlugin = {
      name: 'purposes',
      manifest: { contributes: { hooks: ['beforeQuery'], services: ['purposes'] } },
      setup: `const seen = []; ctx.tap('beforeQuery', async (q) => { seen.push(q.purpose); }); ctx.services.provide('purposes', seen);`,
    };
    const app = await boot(projectWith([tapper]));
    try {
      await app.start();
      await app.queries.run({ sql: 'SELECT 1', caller: LOCAL_ADMIN, purpose: 'forecast' });
      assert.deepEqual(app.services.get<string[]>('purposes'), ['forecast']);
    } finally {
      await app.close();
    }
  });
});
