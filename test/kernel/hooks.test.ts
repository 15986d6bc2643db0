import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KERNEL_HOOKS } from '../../sdk/hooks.js';
import type { DpError } from '../../sdk/errors.js';
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
  it('the kernel declares its hook points once, frozen, and plugins get no raw hooks', async () => {
    assert.ok(Object.isFrozen(KERNEL_HOOKS));
    assert.equal(KERNEL_HOOKS.afterModelBuild.firedBy, 'plugins');
    assert.equal(KERNEL_HOOKS.beforeQuery.firedBy, 'kernel');
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

  it("refuses a tap of a plugin's hook point when that plugin is neither required nor optional", async () => {
    const root = projectWith([TICKER, listener({ contributes: { hooks: ['ticker.tick'] } })]);
    await assert.rejects(boot(root), (e: DpError) => e.code === 'undeclared_dependency' && /'listener'.*'ticker\.tick'.*'ticker'/.test(e.message));
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

  it('refuses to fire a hook the manifest does not list under fires', async () => {
    const firer = (fires?: string[]): TestPlugin => ({
      name: 'streams-like',
      manifest: fires ? { contributes: { fires } } : {},
      setup: `ctx.hook('pipelineEnd');`,
    });
    await assert.rejects(boot(projectWith([firer()])), (e: DpError) => e.code === 'undeclared_fire' && /'streams-like' fires 'pipelineEnd' without declaring it in contributes\.fires/.test(e.message));
    const app = await boot(projectWith([firer(['pipelineEnd'])]));
    await app.close();
  });

  it('a declared firer reaches the taps of a kernel hook', async () => {
    const firer: TestPlugin = {
      name: 'streams-like',
      manifest: { contributes: { fires: ['pipelineEnd'], services: ['runner'] } },
      setup: `const end = ctx.hook('pipelineEnd'); ctx.services.provide('runner', { run: (p) => end.promise(p) });`,
    };
    const tapper: TestPlugin = { name: 'alerter', manifest: { contributes: { hooks: ['pipelineEnd'] } }, setup: `ctx.tap('pipelineEnd', async (p) => { p.alerted = true; });` };
    const app = await boot(projectWith([firer, tapper]));
    try {
      const p: Record<string, unknown> = { runId: 'r' };
      await app.services.get<{ run(p: unknown): Promise<void> }>('runner').run(p);
      assert.equal(p.alerted, true);
    } finally {
      await app.close();
    }
  });

  it('refuses a manifest that fires a hook only the kernel fires', async () => {
    const root = projectWith([{ name: 'sneaky', manifest: { contributes: { fires: ['beforeQuery'] } }, setup: '' }]);
    await assert.rejects(boot(root), (e: DpError) => e.code === 'invalid_plugin_manifest' && /contributes\.fires\.0/.test(e.message));
  });

  it("refuses a hook point not named after its plugin, and a tap of a hook nobody declares", async () => {
    const bad = projectWith([{ name: 'ticker', manifest: { contributes: { hookPoints: [{ name: 'other.tick', kind: 'series', description: 'x' }] } }, setup: '' }]);
    await assert.rejects(boot(bad), /hook point 'other\.tick' must be named 'ticker\.<point>'/);
    const unknown = projectWith([listener({ contributes: { hooks: ['ghost.tick'] } })]);
    await assert.rejects(boot(unknown), /contributes\.hooks lists 'ghost\.tick', which neither the kernel nor an installed plugin declares/);
  });
});
