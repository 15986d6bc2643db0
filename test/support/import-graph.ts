/**
 * The static import graph of a module, from the TypeScript sources (the compiler's own parser):
 * every package a module loads before its code runs, following relative imports. `import type`,
 * `export type` and dynamic `import()` are not followed: they load nothing at that moment.
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

function staticSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const out: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.isTypeOnly) continue;
      // `import { type A, type B } from 'x'` loads nothing either.
      const named = clause?.namedBindings;
      if (clause && !clause.name && named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)) continue;
      out.push((statement.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && !statement.isTypeOnly) {
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
