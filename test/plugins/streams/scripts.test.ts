/**
 * The script runner: `dp run` (in process, sdk/testing runCommand) and `POST /api/run` (a real server) on real
 * DuckDB files; the path rules (folders, symlinks, traversal, languages); captured output and a
 * stack trimmed to the script; SCRIPT_CONTEXT contributions; notebooks' stop-at-first-failure;
 * a script loading 1,000,000 rows through ctx.db.
 */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ScriptRunResult, ScriptsService } from '../../../sdk/index.js';
import { startTestServer, type PluginTestServer } from '../../../sdk/testing.js';
import { cliInProcess, FIXTURE_PLUGINS, makeProject, waitUntil, type InProcessCli } from '../../helpers.js';

const OK_SCRIPT = `
import { label } from './lib/label.ts';
interface Row { id: number; name: string }
export default async (ctx: any) => {
  const rows: Row[] = [{ id: 1, name: 'a' }, { id: 2, name: 'b' }];
  await ctx.db.run('CREATE TABLE IF NOT EXISTS landing_items (id INTEGER, name VARCHAR)');
  await ctx.db.bulkLoad({ table: 'landing_items' }, (w: any) => w.appendRows(rows.map((r) => [r.id, r.name])));
  console.log(label('loaded'), rows.length);
  ctx.log.warn('careful', { n: 2 });
};
`;

const FAILING_SCRIPT = `
const check = (n: number): void => {
  if (n > 1) throw new Error('too many rows: ' + n);
};
export default async (ctx: any) => {
  console.log('checking');
  check(2);
};
`;

const NOTEBOOK = JSON.stringify({
  cells: [
    { type: 'markdown', source: '# Load\nthis is not code' },
    { type: 'sql', source: 'CREATE TABLE nb_a AS SELECT 1 AS x' },
    { type: 'code', source: "const n: number = await db.value('SELECT count(*) FROM nb_a');\nconsole.log('rows', n);\nawait db.run('CREATE TABLE nb_b AS SELECT 2 AS y');" },
    { type: 'ingest', source: "await db.run('INSERT INTO nb_a VALUES (7)');\nthrow new Error('cell went wrong');" },
    { type: 'sql', source: 'CREATE TABLE nb_never AS SELECT 3 AS z' },
  ],
});

describe('script runner: dp run', () => {
  let root: string;
  let cli: InProcessCli;
  const dp = (...args: string[]) => cli.run(args);
  after(() => cli.close());
  before(() => {
    root = makeProject({
      'ingest/load_items.ts': OK_SCRIPT,
      'ingest/lib/label.ts': "export const label = (s: string): string => `[${s}]`;\n",
      'ingest/fails.ts': FAILING_SCRIPT,
      'export/plain.mjs': "export default async (ctx) => { console.log('tables:', await ctx.db.value('SELECT count(*) FROM landing_items')); };\n",
      'export/no_default.js': 'export const x = 1;\n',
      'ingest/broken.ts': 'export default async (ctx: any) => { const x = ; }\n',
      'ingest/legacy.py': 'print(1)\n',
      'transform/staging/a.sql': 'SELECT 1 AS a\n',
      'notebooks/load.dpnb': NOTEBOOK,
    });
    cli = cliInProcess(root);
  });

  it('runs a TypeScript script with its own imports, printing its output and exit 0', async () => {
    const r = await dp('run', 'ingest/load_items.ts');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\[loaded\] 2$/m);
    assert.match(r.stdout, /\[warn\] careful \{"n":2\}/);
    const again = await dp('run', 'export/plain.mjs');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /tables: 2/);
  });

  it('fails a throwing script with its message and a stack of its own frames only (exit 1)', async () => {
    const r = await dp('run', 'ingest/fails.ts', '--json');
    assert.equal(r.code, 1);
    const result = JSON.parse(r.stdout) as ScriptRunResult;
    assert.equal(result.status, 'error');
    assert.equal(result.error, 'too many rows: 2');
    assert.deepEqual(result.output, ['checking']);
    const frames = result.stack!.split('\n');
    assert.equal(frames[0], 'Error: too many rows: 2');
    assert.ok(frames.length >= 2, result.stack);
    // Line 3 is the throw, line 7 the call: both in the script's own TypeScript lines.
    assert.match(frames[1], /ingest\/fails\.ts:3:\d+/);
    assert.ok(frames.slice(1).every((f) => /^\s+at .*ingest\/fails\.ts:\d+:\d+\)?$/.test(f)), result.stack);
    assert.ok(!result.stack!.includes(root) && !result.stack!.includes('node_modules') && !result.stack!.includes('.dp/'), result.stack);
  });

  it('reports a compile error and a module without a default export as failed runs', async () => {
    const broken = await dp('run', 'ingest/broken.ts');
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /ingest\/broken\.ts:1:\d+: Unexpected ";"/);
    const noDefault = await dp('run', 'export/no_default.js');
    assert.equal(noDefault.code, 1);
    assert.match(noDefault.stderr, /export\/no_default\.js has no default export/);
  });

  it('refuses paths outside ingest/, export/ and notebooks/ and other languages, running nothing', async () => {
    for (const p of ['transform/staging/a.sql', '../outside.ts', 'ingest/../transform/staging/a.sql', '/etc/passwd', 'project.yml']) {
      const r = await dp('run', p);
      assert.equal(r.code, 1, p);
      assert.match(r.stderr, /Scripts run only from ingest\/, export\/, notebooks\//, p);
    }
    const py = await dp('run', 'ingest/legacy.py');
    assert.equal(py.code, 1);
    assert.match(py.stderr, /ingest\/legacy\.py: Python scripts cannot run here; scripts are TypeScript or JavaScript \(\.ts, \.js, \.mjs\) or notebooks \(\.dpnb\)/);
  });

  it('runs a notebook: markdown skipped, cells top to bottom with db, stopping at the first failing cell', async () => {
    const r = await dp('run', 'notebooks/load.dpnb', '--json');
    assert.equal(r.code, 1);
    const result = JSON.parse(r.stdout) as ScriptRunResult;
    assert.equal(result.status, 'error');
    assert.equal(result.error, 'cell 3 (ingest) failed: cell went wrong');
    assert.match(result.stack!, /notebooks\/load\.dpnb#cell3:2:\d+/);
    assert.deepEqual(result.output, ['cell 1 (sql): ok', 'rows 1', 'cell 2 (code): ok']);
    const tables = await dp('tables', '--json');
    const names = (JSON.parse(tables.stdout) as Array<{ name: string }>).map((t) => t.name);
    assert.ok(names.includes('nb_a') && names.includes('nb_b'), tables.stdout);
    assert.ok(!names.includes('nb_never'), 'the cell after the failing one never ran');
  });
});

describe('script runner: POST /api/run and SCRIPT_CONTEXT', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({
      plugins: [path.join(FIXTURE_PLUGINS, 'script-extras')],
      builtIn: ['models', 'scripts', 'streams', 'tables'],
      auth: true,
      files: {
        'ingest/greet.ts': "export default async (ctx: any) => { console.log(ctx.greeter.greet('ada')); console.log(typeof ctx.signal.aborted, Object.isFrozen(ctx.config)); };\n",
        'ingest/secret.ts': "export default async (ctx: any) => { if (ctx.secrets.get('API_KEY') !== 'k-123456789') throw new Error('no secret'); if (ctx.env.API_KEY !== 'k-123456789') throw new Error('no env'); console.log('key', ctx.secrets.get('API_KEY')); throw new Error('bad key ' + ctx.env.API_KEY); };\n",
        'ingest/million.ts': `
export default async (ctx: any) => {
  const total = 1_000_000;
  const batch = 10_000;
  const r = await ctx.db.bulkLoad(
    { table: 'million', mode: 'replace', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'amount', type: 'DOUBLE' }, { name: 'label', type: 'VARCHAR' }], transaction: true },
    async (w: any) => {
      for (let start = 0; start < total; start += batch) {
        const ids = new Array(batch), amounts = new Array(batch), labels = new Array(batch);
        for (let i = 0; i < batch; i++) { ids[i] = start + i; amounts[i] = (start + i) * 0.5; labels[i] = 'row' + ((start + i) % 100); }
        await w.appendColumns([ids, amounts, labels]);
      }
    },
  );
  console.log('loaded', r.rows);
};
`,
        '.env': 'API_KEY=k-123456789\n',
        'transform/marts/t.sql': 'SELECT 1 AS a\n',
      },
    });
    fs.mkdirSync(path.join(s.projectRoot, 'ingest', 'linked'), { recursive: true });
    fs.symlinkSync(path.join(s.projectRoot, 'transform', 'marts', 't.sql'), path.join(s.projectRoot, 'ingest', 'linked', 'model.ts'));
    fs.symlinkSync(path.join(s.projectRoot, 'transform'), path.join(s.projectRoot, 'ingest', 'dirlink'));
    fs.writeFileSync(path.join(s.projectRoot, 'transform', 'marts', 'evil.ts'), "export default async (ctx: any) => { await ctx.db.run('CREATE TABLE pwned (x INT)'); };\n");
  });
  after(async () => s?.close());

  it('keeps a script run\'s output with the run: editors read it, viewers do not', async () => {
    const editor = await s.caller('editor');
    const viewer = await s.caller('viewer');
    const ran = await editor.request('POST', '/api/run', { script_path: 'ingest/secret.ts' });
    assert.equal(ran.body.status, 'error', ran.text);
    const listed = await editor.request('GET', '/api/history?kind=script&name=ingest/secret.ts&limit=1');
    const runId = listed.body.runs[0].run_id;
    assert.equal(listed.body.runs[0].output, undefined, 'the list leaves the output out');
    const opened = await editor.request('GET', `/api/history/${runId}`);
    assert.equal(opened.status, 200, opened.text);
    assert.deepEqual(opened.body.output, ['key ${API_KEY}']);
    assert.match(opened.body.error, /bad key \$\{API_KEY\}/);
    const hidden = await viewer.request('GET', `/api/history/${runId}`);
    assert.equal(hidden.status, 200, hidden.text);
    assert.deepEqual([hidden.body.output, hidden.body.output_hidden], [null, true]);
    const rerun = await viewer.request('POST', `/api/history/${runId}/rerun-failed`);
    assert.equal(rerun.status, 403, rerun.text);
    const notStream = await editor.request('POST', `/api/history/${runId}/rerun-failed`);
    assert.equal(notStream.status, 400, notStream.text);
    assert.equal(notStream.body.error.code, 'nothing_to_rerun');
  });

  it('runs a script with the fields other plugins contribute to ctx', async () => {
    const editor = await s.caller('editor');
    const r = await editor.request('POST', '/api/run', { script_path: 'ingest/greet.ts' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'success');
    assert.deepEqual(r.body.output, ['greeting ada from ingest/greet.ts', 'hello ada', 'boolean true']);
    // The script reads .env through ctx; what it prints or throws shows the reference, never the value.
    const secret = await editor.request('POST', '/api/run', { script_path: 'ingest/secret.ts' });
    assert.equal(secret.body.status, 'error', secret.text);
    assert.deepEqual(secret.body.output, ['key ${API_KEY}']);
    assert.equal(secret.body.error, 'bad key ${API_KEY}');
    assert.ok(!secret.text.includes('k-123456789'));
  });

  it('answers 403 to a viewer and runs nothing', async () => {
    const viewer = await s.caller('viewer');
    const r = await viewer.request('POST', '/api/run', { script_path: 'ingest/greet.ts' });
    assert.equal(r.status, 403);
  });

  it('refuses traversal, symlinks out of the script folders and other languages with a 400, running nothing', async () => {
    const editor = await s.caller('editor');
    const cases: Array<[string, string]> = [
      ['../etc/passwd', 'script_path_refused'],
      ['ingest/../transform/marts/evil.ts', 'script_path_refused'],
      ['transform/marts/evil.ts', 'script_path_refused'],
      ['ingest/dirlink/marts/evil.ts', 'script_path_refused'],
      ['ingest/linked/model.ts', 'script_path_refused'],
      [path.join(s.projectRoot, 'transform/marts/evil.ts'), 'script_path_refused'],
      ['ingest/x.py', 'unsupported_script_language'],
      ['ingest/x.sql', 'unsupported_script_language'],
    ];
    for (const [p, code] of cases) {
      const r = await editor.request('POST', '/api/run', { script_path: p });
      assert.equal(r.status, 400, `${p}: ${r.text}`);
      assert.equal(r.body.error.code, code, p);
      assert.ok(!r.text.includes(s.projectRoot), 'no absolute path in the message');
    }
    assert.equal(await s.db.value("SELECT count(*) FROM information_schema.tables WHERE table_name = 'pwned'"), 0);
    const missing = await editor.request('POST', '/api/run', { script_path: 'ingest/absent.ts' });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'file_not_found');
  });

  it('loads 1,000,000 rows through ctx.db in one script', async () => {
    const editor = await s.caller('editor');
    const r = await editor.request('POST', '/api/run', { script_path: 'ingest/million.ts' });
    assert.equal(r.body.status, 'success', r.text);
    assert.deepEqual(r.body.output, ['loaded 1000000']);
    assert.deepEqual(await s.db.all('SELECT count(*)::INT AS n, sum(id)::DOUBLE AS ids, count(DISTINCT label)::INT AS labels FROM million'), [{ n: 1_000_000, ids: 499999500000, labels: 100 }]);
  });

  it('records script runs in the history', async () => {
    const viewer = await s.caller('viewer');
    const r = await viewer.request('GET', '/api/history?limit=100');
    assert.equal(r.status, 200);
    const greet = (r.body.runs as Array<{ kind: string; name: string; status: string; trigger: string }>).find((x) => x.name === 'ingest/greet.ts');
    assert.deepEqual(greet && { kind: greet.kind, status: greet.status, trigger: greet.trigger }, { kind: 'script', status: 'success', trigger: 'api' });
  });

  it('leaves no listener on a signal it was given once each run has ended (a server-long signal would collect one per run)', async () => {
    const scripts = s.app.services.get<ScriptsService>('scripts');
    const controller = new AbortController();
    for (let i = 0; i < 3; i++) assert.equal((await scripts.run('ingest/greet.ts', { signal: controller.signal, trigger: 'test' })).status, 'success');
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  });

  it('gives other plugins the runner as a service, with an abort signal that cancels the script', async () => {
    fs.writeFileSync(
      path.join(s.projectRoot, 'ingest', 'slow.ts'),
      `export default async (ctx: any) => {
        for (let i = 0; ; i++) {
          await ctx.db.run('CREATE OR REPLACE TABLE slow_progress AS SELECT ' + i + ' AS i');
          await new Promise((r) => setTimeout(r, 20));
        }
      };\n`,
    );
    const scripts = s.app.services.get<ScriptsService>('scripts');
    const controller = new AbortController();
    const running = scripts.run('ingest/slow.ts', { signal: controller.signal, trigger: 'test' });
    await waitUntil(async () => (await s.db.value<number>("SELECT count(*)::INTEGER FROM duckdb_tables() WHERE table_name = 'slow_progress'")) === 1, 'the script to run');
    controller.abort(new Error('enough'));
    const result = await running;
    assert.equal(result.status, 'cancelled');
    assert.match(result.error!, /cancelled \(enough\)/);
    const progress = await s.db.value<number>('SELECT i FROM slow_progress');
    // Nothing announces that something did not happen: ten of the script's 20 ms rounds pass.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await s.db.value<number>('SELECT i FROM slow_progress'), progress, 'the script stopped writing');
  });
});
