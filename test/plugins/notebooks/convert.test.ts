/**
 * Conversion between notebooks and scripts: property-style round trips over generated notebooks
 * whose cells hold text that looks like the script's own markers, and the `dp notebook
 * to-script` / `from-script` commands (files equal after the round trip, the script runs with
 * `dp run`).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Notebook, NotebookCell } from '../../../plugins/notebooks/api-types.js';
import { notebookToScript, scriptToNotebook } from '../../../plugins/notebooks/convert.js';
import { notebookText } from '../../../plugins/notebooks/files.js';
import { assertNotebook } from '../../../plugins/notebooks/schema.js';
import { closeInProcessClis, makeProject, runInProcess } from '../../helpers.js';

after(closeInProcessClis);

/** Lines that stress the format: its markers, escapes of markers, template-literal syntax, the closing line. */
const FRAGMENTS = [
  '// %% [code]',
  '// %% [sql] {"id":"x"}',
  '// %%% [markdown]',
  '// %%',
  '// %% metadata {}',
  '/*dp-export*/ const a = 1;',
  '/*dp-dp-export*/ b',
  'export const total = 1;',
  'export { a as b };',
  '  export const indented = 2;',
  '`backtick` and ${template} and \\ backslash \\` and $ {',
  '};',
  'export default async (ctx: any) => {',
  'await db.run(`SELECT 1`);',
  'SELECT * FROM t WHERE s = \'a\\nb\'',
  '-- comment',
  '',
  '   ',
  '//',
  '// ',
  'ünïcødé ✓ 日本',
  '\t tab',
];

/** A small deterministic PRNG (mulberry32), so a failure can be replayed by its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function generate(seed: number): Notebook {
  const rnd = random(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)];
  const types = ['markdown', 'code', 'sql', 'ingest'] as const;
  const cells: NotebookCell[] = [];
  const count = Math.floor(rnd() * 6);
  for (let i = 0; i < count; i++) {
    const lines = Array.from({ length: Math.floor(rnd() * 5) }, () => pick(FRAGMENTS));
    const cell: NotebookCell = { type: pick(types), source: lines.join('\n') + (rnd() < 0.3 ? '\n' : '') };
    if (rnd() < 0.3) cell.id = `c${i}_${seed}`;
    if (rnd() < 0.2) cell.outputs = [{ text: pick(FRAGMENTS) }];
    if (rnd() < 0.1) cell.metadata = { collapsed: true, note: pick(FRAGMENTS) };
    cells.push(cell);
  }
  return rnd() < 0.2 ? { cells, metadata: { author: pick(FRAGMENTS) } } : { cells };
}

describe('notebook ↔ script conversion', () => {
  it('round-trips 500 generated notebooks whose cells look like the markers: from-script(to-script(n)) = n, and back again', async () => {
    for (let seed = 1; seed <= 500; seed++) {
      const notebook = generate(seed);
      assertNotebook(notebook, `seed ${seed}`);
      const script = notebookToScript(notebook);
      const back = scriptToNotebook(script);
      assert.deepEqual(back, notebook, `seed ${seed}:\n${script}`);
      assert.equal(notebookToScript(back), script, `seed ${seed}: the script round trip`);
    }
  });

  it('writes sql cells as db calls and markdown as comments, and turns a plain script into one code cell', async () => {
    const script = notebookToScript({
      cells: [
        { type: 'markdown', source: '# Title' },
        { type: 'sql', source: 'SELECT 1' },
        { type: 'sql', id: 'top', source: 'SELECT `x`' },
        { type: 'code', source: 'export const n = top.length;' },
      ],
    });
    assert.match(script, /^export default async \(ctx: any\) => \{$/m);
    assert.match(script, /^ {2}const \{ db, log, config, env, secrets, signal \} = ctx;$/m);
    assert.match(script, /^\/\/ # Title$/m);
    assert.match(script, /^await db\.run\(`SELECT 1`\);$/m);
    assert.match(script, /^const top = await db\.all\(`SELECT \\`x\\``\);$/m);
    assert.match(script, /^\/\*dp-export\*\/ const n = top\.length;$/m);
    const plain = scriptToNotebook("export default async (ctx) => {\n  await ctx.db.run('CREATE TABLE t AS SELECT 1');\n};\n");
    assert.equal(plain.cells.length, 1);
    assert.equal(plain.cells[0].type, 'code');
    assert.match(plain.cells[0].source as string, /const ctx = \{ db, log, config, env, secrets, signal \};\n {2}await ctx\.db\.run/);
  });

  it('converts with dp notebook both ways to equal files, and the script runs with dp run', async () => {
    const notebook: Notebook = {
      cells: [
        { type: 'markdown', source: '# Load\n// %% [code] looks like a marker' },
        { type: 'sql', source: 'CREATE TABLE loaded AS SELECT 1 AS x' },
        { type: 'sql', id: 'rows_now', source: 'SELECT count(*)::INTEGER AS n FROM loaded' },
        { type: 'ingest', source: "export const n: number = rows_now[0].n;\nawait db.run(`INSERT INTO loaded VALUES (${n + 1})`);\nconsole.log('seen', '// %% [sql] not a marker', n);" },
      ],
    };
    const root = makeProject({ 'ingest/load.dpnb': notebookText(notebook) });
    const original = fs.readFileSync(path.join(root, 'ingest/load.dpnb'), 'utf8');
    const to = await runInProcess(['notebook', 'to-script', 'ingest/load.dpnb', '--project', root]);
    assert.equal(to.code, 0, to.stderr);
    assert.match(to.stdout, /wrote ingest\/load\.ts \(4 cells\)/);
    const script = fs.readFileSync(path.join(root, 'ingest/load.ts'), 'utf8');
    const from = await runInProcess(['notebook', 'from-script', 'ingest/load.ts', '--out', path.join(root, 'notebooks/back.dpnb'), '--project', root]);
    assert.equal(from.code, 0, from.stderr);
    assert.equal(fs.readFileSync(path.join(root, 'notebooks/back.dpnb'), 'utf8'), original);
    const again = await runInProcess(['notebook', 'to-script', 'notebooks/back.dpnb', '--out', path.join(root, 'export/again.ts'), '--project', root]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(fs.readFileSync(path.join(root, 'export/again.ts'), 'utf8'), script);
    assert.deepEqual(fs.readdirSync(path.join(root, 'ingest')).filter((f) => f.endsWith('.tmp')), []);

    const ran = await runInProcess(['run', 'ingest/load.ts', '--project', root]);
    assert.equal(ran.code, 0, ran.stderr + ran.stdout);
    assert.match(ran.stdout, /\/\/ %% \[sql\] not a marker 1/);
    const count = await runInProcess(['query', 'SELECT sum(x)::INTEGER AS s FROM loaded', '--json', '--project', root]);
    assert.equal(JSON.parse(count.stdout).rows[0][0], 3);
  });

  it('refuses what is not a notebook or a script, naming the problem', async () => {
    const root = makeProject({ 'notebooks/bad.dpnb': '{"cells": [{"type": "python", "source": ""}]}', 'notebooks/x.txt': 'x' });
    const bad = await runInProcess(['notebook', 'to-script', 'notebooks/bad.dpnb', '--project', root, '--json']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr + bad.stdout, /invalid_notebook|must be one of/);
    assert.equal(fs.existsSync(path.join(root, 'notebooks/bad.ts')), false);
    const txt = await runInProcess(['notebook', 'from-script', 'notebooks/x.txt', '--project', root]);
    assert.notEqual(txt.code, 0);
    assert.match(txt.stderr + txt.stdout, /not a \.ts, \.js or \.mjs script/);
  });
});
