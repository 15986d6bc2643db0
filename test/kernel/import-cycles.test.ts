/**
 * No import cycle among the project's own modules (kernel/, sdk/, plugins/): each module's
 * imports, `import type` included, point one way, so a module can be read, moved or tested with
 * what it needs and nothing that needs it (issue 30). A dynamic `import()` is not an edge: it is
 * how a module loads a heavy part lazily (docs/plugins.md, "Activation on demand").
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject, REPO_ROOT } from '../helpers.js';
import { importCycles } from '../support/import-graph.js';

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
    }
  };
  for (const d of ['kernel', 'sdk', 'plugins']) walk(path.join(REPO_ROOT, d));
  return out;
}

describe('import cycles', () => {
  it('the cycle finder sees a cycle through import type and a re-export, and none through import()', () => {
    const dir = makeProject({
      'a.ts': "import type { B } from './b.js';\nexport const a = (b: B) => b;\n",
      'b.ts': "export { c as B } from './c.js';\n",
      'c.ts': "import { a } from './a.js';\nexport const c = () => a;\n",
      'lazy.ts': "import { d } from './d.js';\nexport const lazy = d;\n",
      'd.ts': "export const d = async () => (await import('./lazy.js')).lazy;\n",
    });
    const files = ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'lazy.ts'].map((f) => path.join(dir, f));
    assert.deepEqual(importCycles(files, dir), [['a.ts', 'b.ts', 'c.ts']]);
  });

  it('kernel/, sdk/ and plugins/ have no import cycle', () => {
    const files = sourceFiles();
    assert.ok(files.length > 200, `scanned ${files.length} modules`);
    assert.deepEqual(importCycles(files, REPO_ROOT), [], 'cut the cycle: move what both need to a module of its own, or pass the dependency in');
  });
});
