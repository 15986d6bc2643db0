import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fs from 'node:fs';
import path from 'node:path';
import { checkHookDeclarations } from '../../kernel/hooks.js';
import { KERNEL_HOOKS } from '../../sdk/hooks.js';
import type { DpError } from '../../sdk/errors.js';
import { MODELS_SERVICE, type ModelsService } from '../../sdk/index.js';
import { boot, projectWith, type TestPlugin } from './seams.js';

/** Owns the hook point `ticker.tick` and fires it through its service. */
const TICKER: TestPlugin = {
  name: 'ticker',
  manifest: {
    contributes: {
      hookPoints: [{ name: 'ticker.tick', kind: 'series', args: ['tick'], description: 'A tick' }],
      services: ['ticker'],
    },
  },
  setup: `const tick = ctx.hook('ticker.tick');
    ctx.services.provide('ticker', { fire: async (n) => { const t = { n, seen: [] }; await tick.promise(t); return t.seen; } });`,
};

function listener(manifest: Record<string, unknown>): TestPlugin {
  return {
    name: 'listener',
    manifest,
    setup: `ctx.tap('ticker.tick', async (t) => { t.seen.push('listener:' + t.n); });`,
  };
}

describe('hook points', () => {
  it('the kernel declares its hook points once, frozen: the query path only; plugins get no raw hooks', async () => {
    assert.ok(Object.isFrozen(KERNEL_HOOKS));
    // The kernel knows no feature: a transform's, a sync's or a stream's hook points are their plugins'.
    assert.deepEqual(Object.keys(KERNEL_HOOKS), ['interceptQuery', 'beforeQuery', 'afterQuery']);
    let ctxKeys: string[] = [];
    const probe: TestPlugin = { name: 'probe', manifest: { contributes: { services: ['probe'] } }, setup: `ctx.services.provide('probe', Object.keys(ctx));` };
    const app = await boot(projectWith([probe]));
    try {
      ctxKeys = app.services.get<string[]>('probe');
      assert.ok(Object.isFrozen(app.hooks));
    } finally {
      await app.close();
    }
    assert.ok(!ctxKeys.includes('hooks'), 'no ctx.hooks backdoor');
    assert.ok(ctxKeys.includes('tap') && ctxKeys.includes('hook'));
  });

  it('a plugin taps a hook point another plugin declares, when it lists it and its owner', async () => {
    const app = await boot(projectWith([TICKER, listener({ requires: ['ticker'], contributes: { hooks: ['ticker.tick'] } })]));
    try {
      assert.deepEqual(await app.services.get<{ fire(n: number): Promise<string[]> }>('ticker').fire(7), ['listener:7']);
    } finally {
      await app.close();
    }
  });

  it('refuses a tap of a plugin hook point the manifest does not list', async () => {
    const root = projectWith([TICKER, listener({ requires: ['ticker'] })]);
    await assert.rejects(boot(root), (e: DpError) => e.code === 'undeclared_hook' && /'listener' taps 'ticker\.tick' without declaring it in contributes\.hooks/.test(e.message));
  });

  it("taps a plugin's hook point without listing its owner, like an extension point, in either setup order", async () => {
    // 'a-listener' sets up before 'ticker' (no dependency orders them): the hook point exists before any setup.
    const early: TestPlugin = { ...listener({ contributes: { hooks: ['ticker.tick'] } }), name: 'a-listener' };
    const app = await boot(projectWith([early, TICKER]));
    try {
      assert.deepEqual(await app.services.get<{ fire(n: number): Promise<string[]> }>('ticker').fire(3), ['listener:3']);
    } finally {
      await app.close();
    }
  });

  it('a tap of an optional, disabled plugin hook point is a no-op', async () => {
    const root = projectWith([TICKER, listener({ optional: ['ticker'], contributes: { hooks: ['ticker.tick'] } })], '  disable: [ticker]\n');
    const app = await boot(root);
    await app.close();
  });

  it("firing the hook point of an optional, disabled plugin reaches nobody", async () => {
    const relay: TestPlugin = {
      name: 'relay',
      manifest: { optional: ['ticker'], contributes: { fires: ['ticker.tick'], services: ['relay'] } },
      setup: `const tick = ctx.hook('ticker.tick'); ctx.services.provide('relay', { fire: () => tick.promise({}), used: () => tick.isUsed() });`,
    };
    const app = await boot(projectWith([TICKER, relay], '  disable: [ticker]\n'));
    try {
      const svc = app.services.get<{ fire(): Promise<unknown>; used(): boolean }>('relay');
      assert.equal(await svc.fire(), undefined);
      assert.equal(svc.used(), false);
    } finally {
      await app.close();
    }
  });

  it("refuses to fire another plugin's hook point the manifest does not list under fires", async () => {
    const firer = (fires?: string[]): TestPlugin => ({
      name: 'relay',
      manifest: fires ? { contributes: { fires } } : {},
      setup: `ctx.hook('ticker.tick');`,
    });
    await assert.rejects(boot(projectWith([TICKER, firer()])), (e: DpError) => e.code === 'undeclared_fire' && /'relay' fires 'ticker\.tick' without declaring it in contributes\.fires/.test(e.message));
    const app = await boot(projectWith([TICKER, firer(['ticker.tick'])]));
    await app.close();
  });

  it("a declared firer reaches the taps of another plugin's hook point", async () => {
    const firer: TestPlugin = {
      name: 'relay',
      manifest: { contributes: { fires: ['ticker.tick'], services: ['runner'] } },
      setup: `const tick = ctx.hook('ticker.tick'); ctx.services.provide('runner', { run: (t) => tick.promise(t) });`,
    };
    const app = await boot(projectWith([TICKER, firer, listener({ contributes: { hooks: ['ticker.tick'] } })]));
    try {
      const t = { n: 1, seen: [] as string[] };
      await app.services.get<{ run(t: unknown): Promise<void> }>('runner').run(t);
      assert.deepEqual(t.seen, ['listener:1']);
    } finally {
      await app.close();
    }
  });

  it("a third-party plugin taps a built-in plugin's hook point by name (models.afterModelBuild)", async () => {
    const watcher: TestPlugin = {
      name: 'build-watcher',
      manifest: { contributes: { hooks: ['models.afterModelBuild'], services: ['build-watcher'] } },
      setup: `const seen = []; ctx.tap('models.afterModelBuild', async (b) => { seen.push(b.model + ':' + b.status); }); ctx.services.provide('build-watcher', seen);`,
    };
    const root = projectWith([watcher]);
    fs.mkdirSync(path.join(root, 'transform', 'marts'), { recursive: true });
    fs.writeFileSync(path.join(root, 'transform', 'marts', 'one.sql'), 'SELECT 1 AS n\n');
    const app = await boot(root, true);
    try {
      await app.services.get<ModelsService>(MODELS_SERVICE.id).transform({});
      assert.deepEqual(app.services.get<string[]>('build-watcher'), ['marts.one:built']);
    } finally {
      await app.close();
    }
  });

  it('refuses a manifest that fires a hook only the kernel fires', async () => {
    const root = projectWith([{ name: 'sneaky', manifest: { contributes: { fires: ['beforeQuery'] } }, setup: '' }]);
    await assert.rejects(boot(root), (e: DpError) => e.code === 'invalid_plugin_manifest' && /contributes\.fires\.0/.test(e.message));
    // The same check at boot, for a manifest no schema validated.
    assert.throws(
      () => checkHookDeclarations([{ name: 'sneaky', version: '1.0.0', entry: './index.mjs', contributes: { fires: ['beforeQuery'] } }], [], (n) => n),
      /contributes\.fires lists 'beforeQuery', which only the kernel fires/,
    );
  });

  it("refuses a hook point not named after its plugin, and a tap of a hook nobody declares", async () => {
    const bad = projectWith([{ name: 'ticker', manifest: { contributes: { hookPoints: [{ name: 'other.tick', kind: 'series', description: 'x' }] } }, setup: '' }]);
    await assert.rejects(boot(bad), /hook point 'other\.tick' must be named 'ticker\.<point>'/);
    const unknown = projectWith([listener({ contributes: { hooks: ['ghost.tick'] } })]);
    await assert.rejects(boot(unknown), /contributes\.hooks lists 'ghost\.tick', which neither the kernel nor an installed plugin declares/);
  });
});
