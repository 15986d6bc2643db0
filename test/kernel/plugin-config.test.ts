import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DpError } from '../../sdk/errors.js';
import { makeProject } from '../helpers.js';
import { boot, projectWith, type TestPlugin } from './seams.js';

/** Owns `greeting:` in project.yml (a plain JSON schema, as a JavaScript plugin ships it). */
const GREETER: TestPlugin = {
  name: 'greeter',
  manifest: { contributes: { configuration: ['greeting'], services: ['greeter'] } },
  module: `const GREETING = { key: 'greeting', schema: { type: 'object', default: {}, additionalProperties: false,
    properties: { word: { type: 'string', default: 'hello' }, times: { type: 'integer', minimum: 1, default: 1 } } } };`,
  config: '[GREETING]',
  setup: `ctx.services.provide('greeter', { settings: () => ctx.config(GREETING), peek: () => ctx.config({ key: 'lint', schema: {} }) });`,
};

const yml = (body: string) => `name: cfg\ndatabase:\n  path: c.duckdb\n${body}`;

describe("plugins' parts of project.yml", () => {
  it("hands a plugin its key with the schema's defaults, and refuses a read of another plugin's key", async () => {
    const app = await boot(projectWith([GREETER], 'greeting:\n  times: 3\n'));
    try {
      const svc = app.services.get<{ settings(): unknown; peek(): unknown }>('greeter');
      assert.deepEqual(svc.settings(), { word: 'hello', times: 3 });
      assert.throws(() => svc.peek(), (e: DpError) => e.code === 'undeclared_configuration' && /'greeter' reads project\.yml key 'lint'/.test(e.message));
    } finally {
      await app.close();
    }
  });

  it("reports a bad value of a plugin's key at its line", async () => {
    const root = projectWith([GREETER], 'greeting:\n  word: hi\n  times: 0\n');
    // name, database, path, plugins, paths, greeting, word, times → line 8
    await assert.rejects(boot(root), (e: DpError) => {
      assert.equal(e.code, 'invalid_project_yml');
      assert.equal(e.details.line, 8);
      assert.equal(e.details.field, 'greeting.times');
      assert.match(e.message, /^project\.yml line 8: 'greeting\.times' must be >= 1/);
      return true;
    });
  });

  it("validates built-in plugins' keys at the right line: quality, alerts.timeout_seconds, lint", async () => {
    const cases: Array<[string, number, string]> = [
      ['quality:\n  anomaly_detection:\n    lookback: many\n', 6, 'quality.anomaly_detection.lookback'],
      ['alerts:\n  channels: [log]\n  timeout_seconds: -5\n', 6, 'alerts.timeout_seconds'],
      ['lint:\n  rules: 7\n', 5, 'lint.rules'],
      ['exposures:\n  - name: dash\n    depends_on: nope\n', 6, 'exposures.0.depends_on'],
      ['masking:\n  enforce_without_auth: sometimes\n', 5, 'masking.enforce_without_auth'],
    ];
    for (const [body, line, field] of cases) {
      await assert.rejects(boot(makeProject({ 'project.yml': yml(body) }), true), (e: DpError) => {
        assert.equal(e.code, 'invalid_project_yml', body);
        assert.deepEqual([e.details.line, e.details.field], [line, field], e.message);
        return true;
      });
    }
  });

  it('alerts.timeout_seconds is part of the schema and reaches the plugin', async () => {
    const app = await boot(makeProject({ 'project.yml': yml('alerts:\n  timeout_seconds: 3\n') }), true);
    try {
      assert.deepEqual(app.configOf('alerts'), { channels: [], on_success: false, on_failure: true, timeout_seconds: 3 });
    } finally {
      await app.close();
    }
  });

  it('refuses a top-level key nobody declares, naming its line', async () => {
    await assert.rejects(boot(makeProject({ 'project.yml': yml('query:\n  default_limit: 10\ncolour: blue\n') }), true), (e: DpError) => {
      assert.equal(e.code, 'invalid_project_yml');
      assert.equal(e.details.line, 6);
      assert.equal(e.details.field, 'colour');
      assert.match(e.message, /^project\.yml line 6: unknown key 'colour'/);
      return true;
    });
  });

  it("accepts and ignores the key of a disabled plugin, even an invalid one", async () => {
    const root = makeProject({ 'project.yml': yml('plugins:\n  disable: [quality]\nquality:\n  anomaly_detection:\n    lookback: many\n') });
    const app = await boot(root, true);
    try {
      assert.throws(() => app.configOf('quality'), /No enabled plugin owns project\.yml key 'quality'/);
    } finally {
      await app.close();
    }
  });

  it('accepts the keys SPEC.md names whose plugin does not exist yet (reserved by the kernel)', async () => {
    const root = makeProject({
      'project.yml': yml('connections:\n  pg: { type: postgres }\n'),
    });
    const app = await boot(root, true);
    try {
      assert.deepEqual(app.project.config.connections.pg, { type: 'postgres' });
    } finally {
      await app.close();
    }
  });

  it("refuses a plugin that claims a kernel or reserved key, or declares a key without a schema", async () => {
    const claim = (key: string): TestPlugin => ({ ...GREETER, manifest: { contributes: { configuration: [key], services: ['greeter'] } } });
    await assert.rejects(boot(projectWith([claim('query')])), /contributes\.configuration lists 'query', which the kernel owns/);
    await assert.rejects(boot(projectWith([claim('connections')])), /contributes\.configuration lists 'connections', which the kernel owns/);
    await assert.rejects(boot(projectWith([claim('salutation')])), (e: DpError) => e.code === 'undeclared_configuration' && /'greeter' lists project\.yml key 'salutation'/.test(e.message));
    const noManifest: TestPlugin = { ...GREETER, manifest: { contributes: { services: ['greeter'] } } };
    await assert.rejects(boot(projectWith([noManifest])), /has a config schema for 'greeting' without listing it in contributes\.configuration/);
  });
});
