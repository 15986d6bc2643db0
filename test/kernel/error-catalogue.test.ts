/**
 * The error catalogues against the sources: every code thrown (`new DpError(status, 'code'`, the
 * sdk helpers `badRequest('code'` …, and the auth helper `unauthenticated('code'`) is catalogued
 * with the same status, no code is defined twice, no catalogued code is stale, and docs/errors.md
 * is what the catalogues generate.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadCatalogues, renderErrorsDoc } from '../../kernel/error-catalogue.js';
import { REPO_ROOT } from '../helpers.js';

const HELPER_STATUS: Record<string, number> = { badRequest: 400, unauthorized: 401, unauthenticated: 401, forbidden: 403, notFound: 404, conflict: 409 };

interface Use {
  file: string;
  line: number;
  /** The code, or a pattern for a template literal (`invalid_${field}` → /^invalid_.+$/). */
  code: string;
  pattern: RegExp | null;
  status: number | null;
}

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
    }
  };
  for (const d of ['kernel', 'sdk', 'plugins']) walk(path.join(REPO_ROOT, d));
  return out;
}

function scan(): Use[] {
  const uses: Use[] = [];
  const call = /\b(?:new DpError\(\s*([^,()]+?)\s*,\s*|(badRequest|unauthorized|unauthenticated|forbidden|notFound|conflict)\(\s*)(['"`])([^'"`]*)\3/g;
  for (const file of sourceFiles()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(call)) {
      const raw = m[4];
      const isTemplate = m[3] === '`' && raw.includes('${');
      const status = m[2] ? HELPER_STATUS[m[2]] : /^\d{3}$/.test(m[1]) ? Number(m[1]) : null;
      uses.push({
        file: path.relative(REPO_ROOT, file),
        line: text.slice(0, m.index).split('\n').length,
        code: raw,
        pattern: isTemplate ? new RegExp(`^${raw.split(/\$\{[^}]*\}/).map((s) => s.replace(/[.*+?^()|[\]\\]/g, '\\$&')).join('.+')}$`) : null,
        status,
      });
    }
  }
  return uses;
}

describe('error catalogue', () => {
  it('finds the uses it checks (the scan is not vacuous)', () => {
    const uses = scan();
    assert.ok(uses.length > 100, `${uses.length} uses`);
    for (const expected of ['read_only_violation', 'auth_required', 'policy_not_found', 'protected_path', 'invalid_notebook']) {
      assert.ok(uses.some((u) => u.code === expected), expected);
    }
  });

  it('defines each code once, in one catalogue, with a status and a meaning', async () => {
    const seen = new Map<string, string>();
    for (const c of await loadCatalogues()) {
      for (const [code, info] of Object.entries(c.errors)) {
        assert.ok(/^[a-z][a-z0-9_]*$/.test(code), `${c.source}: code '${code}'`);
        assert.ok(!seen.has(code), `'${code}' is defined in ${seen.get(code)} and ${c.source}`);
        seen.set(code, c.source);
        assert.ok(Number.isInteger(info.status) && info.status >= 400 && info.status < 600, `${code}: status ${info.status}`);
        assert.ok(info.meaning.length > 10, `${code}: meaning`);
      }
    }
    assert.ok(seen.size > 100);
  });

  it('catalogues every code the sources throw, with the status they throw it with', async () => {
    const all = new Map<string, number>();
    const ownerOf = new Map<string, string>();
    for (const c of await loadCatalogues()) {
      for (const [code, info] of Object.entries(c.errors)) {
        all.set(code, info.status);
        ownerOf.set(code, c.owner);
      }
    }
    // A template code (`invalid_${field}`) is matched against the catalogue of the file's own owner.
    const owner = (file: string) => (file.startsWith('plugins/') ? file.split('/')[1] : file.split('/')[0]);
    const problems: string[] = [];
    for (const u of scan()) {
      if (u.pattern) {
        const matches = [...all.keys()].filter((code) => ownerOf.get(code) === owner(u.file) && u.pattern!.test(code));
        if (matches.length === 0) problems.push(`${u.file}:${u.line}: no catalogued code matches ${u.code}`);
        for (const code of matches) if (u.status !== null && all.get(code) !== u.status) problems.push(`${u.file}:${u.line}: ${code} thrown as ${u.status}, catalogued as ${all.get(code)}`);
        continue;
      }
      if (!all.has(u.code)) problems.push(`${u.file}:${u.line}: '${u.code}' (status ${u.status}) is in no errors.ts catalogue`);
      else if (u.status !== null && all.get(u.code) !== u.status) problems.push(`${u.file}:${u.line}: '${u.code}' thrown as ${u.status}, catalogued as ${all.get(u.code)}`);
    }
    assert.deepEqual(problems, []);
  });

  it('has no stale entries: each catalogued code appears in the sources of its owner (or, for shared codes, anywhere)', async () => {
    const texts = new Map(sourceFiles().map((f) => [path.relative(REPO_ROOT, f), fs.readFileSync(f, 'utf8')]));
    const patterns = scan().filter((u) => u.pattern);
    const stale: string[] = [];
    const catalogues = await loadCatalogues();
    // The catalogues themselves (and the sdk's error module) name every code; a module that only
    // shares their file name (kernel/database/errors.ts translates DuckDB's errors) is a source.
    const catalogueFiles = new Set([...catalogues.map((c) => c.source), 'sdk/errors.ts', 'sdk/error-codes.ts']);
    for (const c of catalogues) {
      const prefix = c.owner === 'sdk' ? '' : c.owner === 'kernel' ? 'kernel/' : `plugins/${c.owner}/`;
      for (const code of Object.keys(c.errors)) {
        const quoted = new RegExp(`['"\`]${code}['"\`]`);
        const used = [...texts].some(([file, text]) => file.startsWith(prefix) && !catalogueFiles.has(file) && quoted.test(text));
        const byPattern = patterns.some((u) => u.file.startsWith(prefix) && u.pattern!.test(code));
        if (!used && !byPattern) stale.push(`${c.source}: '${code}' is never thrown`);
      }
    }
    assert.deepEqual(stale, []);
  });

  it('docs/errors.md is what the catalogues generate (the build writes it)', async () => {
    const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs', 'errors.md'), 'utf8');
    assert.equal(doc, renderErrorsDoc(await loadCatalogues()));
    assert.match(doc, /\| `read_only_violation` \| 400 \|/);
  });
});
