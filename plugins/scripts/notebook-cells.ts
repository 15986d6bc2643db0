/**
 * Compiling a notebook `code`/`ingest` cell for an interactive session or a pipeline run (the
 * scripts service's `compileNotebookCell`, which the notebooks plugin calls): esbuild as for
 * scripts (TypeScript or JavaScript, target node20), the module written to the same store
 * (`.dp/scripts/`, compile.ts writeModule), imported once and called afresh per run.
 *
 * A cell is a module body with top-level await. Two things a script does not have:
 * - `export const x = ...` (and `export { a as b }`, `export function f`) name values later
 *   cells of the same session see as variables. esbuild collects every export into one trailing
 *   `export {...}` clause, which is read here and turned into the cell's returned exports.
 * - The value of the last expression statement is the cell's `value`. esbuild prints each
 *   top-level statement from column 0, so the last one is found from the end and confirmed by
 *   compiling it alone as a parenthesised expression (no hand-written parser; a statement that
 *   is not an expression simply gives no value).
 * The body then runs inside `async (__dp) => {}` with console, `db`, `log`, `config`, `env`,
 * `secrets`, `signal` and the earlier exports in scope (an inner function, so the cell may
 * declare the same names again). Errors are reported on the cell's own lines through the
 * source map of the first step.
 */
import crypto from 'node:crypto';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Esbuild from 'esbuild';
import type { CompiledNotebookCell, NotebookCellCompileFailure } from '../../sdk/index.js';
import { esbuild, writeModule } from './compile.js';

/** The names every cell has from its context; an export of the same name is not passed on. */
export const CONTEXT_NAMES = ['console', 'db', 'log', 'config', 'env', 'secrets', 'signal'] as const;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

type CompiledCell = CompiledNotebookCell;
type CellCompileError = NotebookCellCompileFailure;

/** Statements that are never the cell's value, even though a parenthesised form may parse. */
const NOT_A_VALUE = /^(async\s+function\b|function\b|class\b|const\b|let\b|var\b|import\b|export\b|if\b|for\b|while\b|do\b|switch\b|try\b|return\b|throw\b|break\b|continue\b|debugger\b)/;

async function parses(code: string): Promise<boolean> {
  try {
    await esbuild().transform(code, { loader: 'js', format: 'esm', target: 'node20', logLevel: 'silent' });
    return true;
  } catch {
    return false;
  }
}

/** `a`, `b as c` entries of an `export { ... }` clause → exported name → local name. */
function exportClause(body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of body.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([A-Za-z_$][\w$]*)(?:\s+as\s+("[^"]*"|[A-Za-z_$][\w$]*))?$/.exec(entry);
    if (!m) continue;
    const exported = (m[2] ?? m[1]).replace(/^"|"$/g, '');
    out[exported] = m[1];
  }
  return out;
}

/**
 * Compiles a cell; `scopeNames` are the earlier cells' exports it may read. Throws
 * `{message, line}` (CellCompileError) when the cell does not compile.
 */
export async function compileNotebookCell(root: string, label: string, source: string, scopeNames: string[], takeValue = true): Promise<CompiledCell> {
  let first: Esbuild.BuildResult<{ write: false; metafile: true }>;
  try {
    first = await esbuild().build({
      stdin: { contents: source, loader: 'ts', sourcefile: label },
      write: false,
      bundle: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'external',
      sourcesContent: false,
      outfile: path.join(root, '.dp', 'scripts', 'cell.mjs'),
      logLevel: 'silent',
    });
  } catch (e) {
    const error = (e as Esbuild.BuildFailure).errors?.[0];
    if (!error) throw e;
    throw { message: error.text, line: error.location?.line ?? null } satisfies CellCompileError;
  }
  const js = first.outputFiles.find((f) => f.path.endsWith('.mjs'))!.text;
  const map = new SourceMap(JSON.parse(first.outputFiles.find((f) => f.path.endsWith('.map'))!.text));
  const lines = js.replace(/\n+$/, '').split('\n');

  if (lines.some((l) => /^import\b/.test(l))) {
    const at = lines.findIndex((l) => /^import\b/.test(l));
    const entry = map.findEntry(at, 0) as { originalLine?: number };
    throw { message: "a cell cannot use import statements; use `const m = await import('name')`", line: entry.originalLine !== undefined ? entry.originalLine + 1 : null } satisfies CellCompileError;
  }

  // The trailing export clause esbuild writes for every export of the cell.
  let exports: Record<string, string> = {};
  const clauseStart = lines.findIndex((l) => /^export\s*\{/.test(l));
  if (clauseStart >= 0) {
    const clause = lines.slice(clauseStart).join('\n');
    const m = /^export\s*\{([\s\S]*)\};?\s*$/.exec(clause);
    if (!m) throw { message: 'this export form is not supported in a cell; use `export const name = ...`', line: null } satisfies CellCompileError;
    exports = exportClause(m[1]);
    lines.length = clauseStart;
  }

  // The last top-level statement, if it is an expression, becomes the cell's value.
  let hasValue = false;
  for (let i = lines.length - 1; takeValue && i >= 0; i--) {
    const line = lines[i];
    if (line === '' || /^[\s})\]]/.test(line)) continue;
    if (NOT_A_VALUE.test(line)) break;
    const statement = lines.slice(i).join('\n').replace(/;\s*$/, '');
    if (statement.trim() && (await parses(`(${statement}\n);`)) && (await parses(lines.slice(0, i).join('\n')))) {
      lines[i] = `__dp_value = (${line}`;
      lines[lines.length - 1] = lines[lines.length - 1].replace(/;\s*$/, '') + ');';
      hasValue = true;
    }
    break;
  }

  const scope = scopeNames.filter((n) => IDENTIFIER.test(n) && !(CONTEXT_NAMES as readonly string[]).includes(n) && !n.startsWith('__dp'));
  const returned = Object.entries(exports)
    .filter(([exported]) => exported !== 'default')
    .map(([exported, local]) => `${JSON.stringify(exported)}: ${local}`)
    .join(', ');
  // Line 1 is the wrapper, so module line n is line n-1 of esbuild's output.
  const header =
    'export default async function __dpCell(__dp) { const console = __dp.console; const { db, log, config, env, secrets, signal } = __dp.ctx; ' +
    (scope.length ? `const { ${scope.join(', ')} } = __dp.scope; ` : '') +
    'let __dp_value; const __dp_exports = await (async () => {';
  const footer = `return { ${returned} };\n})();\nreturn { value: __dp_value, exports: __dp_exports };\n}\n`;
  const text = `${header}\n${lines.join('\n')}\n${footer}`;
  if (!(await parses(text))) {
    // A statement split wrongly (inside a template literal): compile without a value.
    if (hasValue) return compileNotebookCell(root, label, source, scopeNames, false);
    throw { message: 'the cell does not compile', line: null } satisfies CellCompileError;
  }
  const file = writeModule(path.join(root, '.dp', 'scripts'), `cell-${crypto.createHash('sha256').update(text).digest('hex').slice(0, 32)}`, text);
  const bodyLines = lines.length;
  return {
    url: pathToFileURL(file).href,
    file,
    exports,
    hasValue,
    cellLine(moduleLine, column) {
      // Line 1 is the wrapper, the lines after the body its footer: neither is the cell's.
      if (moduleLine < 2 || moduleLine - 1 > bodyLines) return null;
      const entry = map.findEntry(moduleLine - 2, Math.max(0, column - 1)) as { originalLine?: number };
      return entry.originalLine !== undefined ? entry.originalLine + 1 : null;
    },
  };
}

/** The 1-based cell line of the first frame of `error` inside the compiled cell. */
export function errorLine(error: unknown, compiled: CompiledCell): number | null {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return null;
  for (const line of error.stack.split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m) continue;
    if (m[1] !== compiled.url && m[1] !== compiled.file) continue;
    return compiled.cellLine(Number(m[2]), Number(m[3]));
  }
  return null;
}

/**
 * The stack of an error thrown by a cell, trimmed to the cell's own frames on its own lines
 * (`Error: boom\n    at notebooks/a.dpnb#cell3:2:7`), as the script runner reports scripts.
 */
export function cellStack(error: unknown, compiled: CompiledCell, label: string): string | undefined {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return undefined;
  const frames: string[] = [];
  for (const line of error.stack.split('\n').slice(1)) {
    const m = /^\s*at (?:(.*?) \()?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m || (m[2] !== compiled.url && m[2] !== compiled.file)) continue;
    const at = compiled.cellLine(Number(m[3]), Number(m[4]));
    if (at === null) continue;
    const fn = m[1] && !m[1].includes('__dpCell') && !m[1].startsWith('async ') ? m[1] : '';
    frames.push(`    at ${fn ? `${fn} (` : ''}${label}:${at}:${m[4]}${fn ? ')' : ''}`);
  }
  return [`${error.name}: ${error.message}`, ...frames].join('\n');
}
