/**
 * The static import graph of a module, from the TypeScript sources (the compiler's own parser):
 * every package a module loads before its code runs, following relative imports. `import type`,
 * `export type` and dynamic `import()` are not followed: they load nothing at that moment.
 * And the cycles among the project's own modules, where `import type` does count: a module
 * that needs another's types depends on it as much as one that calls it.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The package name of a bare specifier (`@scope/name/sub` → `@scope/name`), or null for a relative/node: one. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function staticSpecifiers(file: string, options: { types?: boolean } = {}): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const out: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.isTypeOnly && !options.types) continue;
      // `import { type A, type B } from 'x'` loads nothing either.
      const named = clause?.namedBindings;
      if (!options.types && clause && !clause.name && named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)) continue;
      out.push((statement.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && (options.types || !statement.isTypeOnly)) {
      out.push((statement.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  return out;
}

/** A relative specifier's source (`./x.js` → `./x.ts` or `./x.tsx`; a JavaScript plugin's own `.js`), or null when there is none. */
function sourceOf(from: string, specifier: string): string | null {
  const target = path.resolve(path.dirname(from), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), target.replace(/\.js$/, '.tsx'), target, `${target}.ts`, path.join(target, 'index.ts')]) {
    if (/\.(ts|tsx|js|mjs)$/.test(candidate) && fs.existsSync(candidate)) return candidate;
  }
  return null;
}

/** Every package `entry` loads statically, each with the chain of files that imports it. */
export function staticPackages(entry: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const seen = new Set<string>();
  const visit = (file: string, trail: string[]) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const specifier of staticSpecifiers(file)) {
      const pkg = packageOf(specifier);
      if (pkg) {
        if (!found.has(pkg)) found.set(pkg, [...trail, file]);
        continue;
      }
      if (specifier.startsWith('node:')) continue;
      const next = sourceOf(file, specifier);
      if (next) visit(next, [...trail, file]);
    }
  };
  visit(entry, []);
  return found;
}

/**
 * The import cycles among `files` (static imports and re-exports, type-only ones included; a
 * dynamic `import()` is a deliberate lazy edge and not followed): each strongly connected
 * component of more than one module, as paths relative to `root`, sorted.
 */
export function importCycles(files: string[], root: string): string[][] {
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const targets = staticSpecifiers(file, { types: true })
      .filter((s) => s.startsWith('.'))
      .map((s) => sourceOf(file, s))
      .filter((t): t is string => t !== null && known.has(t));
    edges.set(file, [...new Set(targets)]);
  }
  // Tarjan's strongly connected components.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const connect = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(path.relative(root, w).split(path.sep).join('/'));
    } while (w !== v);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const file of files) if (!index.has(file)) connect(file);
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}
