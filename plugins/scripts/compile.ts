/**
 * Compiling ingest/export scripts (`.ts`, `.js`, `.mjs`) to one ES module with esbuild, the
 * maintained transpiler DESIGN.md asks for (no hand-rolled TypeScript stripping).
 *
 * Why a bundle and not a per-file transform: a script may import its own helpers
 * (`./lib/parse.ts`), which Node cannot load as TypeScript; esbuild follows relative imports and
 * leaves packages external. A bare import (`pg`, `apache-arrow`) is resolved at compile time,
 * first from the script's folder (the project's own node_modules), then from dp's installation,
 * and written as an absolute file URL, so the compiled module loads from wherever it is written.
 *
 * The module goes to `.dp/scripts/<sha256>.mjs` (dp's hidden state folder) and is imported by
 * that name: an unchanged script reuses Node's module cache, a changed one is a new file. Each
 * run calls the default export afresh. The source map stays in memory so a stack is reported
 * against the script's own lines (`ingest/events.ts:12:7`), not the bundle's.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { isBuiltin, SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as Esbuild from 'esbuild';
import { badRequest, requireOnFirstUse } from '../../sdk/index.js';

/** Where the compiled code finds the console of the run it belongs to (scripts.ts installs it). */
export const SCRIPT_CONSOLE = Symbol.for('dp.streams.scriptConsole');

export interface CompiledScript {
  /** file: URL of the compiled module. */
  url: string;
  /** Absolute path of the compiled module (frames in stacks name it). */
  file: string;
  /** Maps the compiled module's lines back to the sources (project-relative paths). */
  map: SourceMap;
  /** Sources of the map, project-relative, by their index in the map. */
  sources: string[];
  /** Added to mapped lines (a notebook cell is wrapped in one line of its own). */
  lineOffset?: number;
}

/** Compiled modules kept in .dp/scripts/; the least recently written beyond this are removed. */
const KEEP_MODULES = 200;

/** Writes a compiled module once (atomically) under its hash, pruning the oldest beyond KEEP_MODULES (scripts and notebook cells alike). */
export function writeModule(outDir: string, hash: string, text: string): string {
  const file = path.join(outDir, `${hash}.mjs`);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
  // A module already imported stays in Node's cache, so removing its file harms no run.
  const modules = fs.readdirSync(outDir).filter((f) => f.endsWith('.mjs'));
  if (modules.length > KEEP_MODULES) {
    const byAge = modules.map((f) => ({ f, t: fs.statSync(path.join(outDir, f)).mtimeMs })).sort((a, b) => a.t - b.t);
    for (const { f } of byAge.slice(0, modules.length - KEEP_MODULES)) fs.rmSync(path.join(outDir, f), { force: true });
  }
  return file;
}

/** esbuild, loaded on the first compile: a server or command that compiles no script and no notebook cell never loads it (10–18 ms of CPU at every start otherwise). */
export const esbuild = requireOnFirstUse<typeof Esbuild>(import.meta.url, 'esbuild');

/** dp's own folder: bare imports a project does not provide resolve from here. */
const DP_RESOLVE_DIR = path.dirname(fileURLToPath(import.meta.url));

const bareImports: Esbuild.Plugin = {
  name: 'dp-bare-imports',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'dp-inner') return undefined;
      if (isBuiltin(args.path)) return { path: args.path, external: true };
      for (const resolveDir of [args.resolveDir, DP_RESOLVE_DIR]) {
        const r = await build.resolve(args.path, { kind: args.kind, resolveDir, pluginData: 'dp-inner' });
        if (r.errors.length === 0 && r.path) return { path: pathToFileURL(r.path).href, external: true };
      }
      return { errors: [{ text: `Could not resolve package '${args.path}' (neither the project nor dp provides it)` }] };
    });
  },
};

/** Compiles `abs` (inside `root`) and writes the module; throws DpError 400 `script_compile_error` naming file and line. */
export async function compileScript(root: string, abs: string): Promise<CompiledScript> {
  const outDir = path.join(root, '.dp', 'scripts');
  let result: Esbuild.BuildResult<{ write: false; outfile: string }>;
  try {
    result = await esbuild().build({
      entryPoints: [abs],
      absWorkingDir: root,
      outfile: path.join(outDir, 'script.mjs'),
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'external',
      sourcesContent: false,
      logLevel: 'silent',
      plugins: [bareImports],
      // Every console call of the script (and its helpers) lands in its own run's output.
      banner: { js: `const console = globalThis[Symbol.for('dp.streams.scriptConsole')] ?? globalThis.console;` },
    });
  } catch (e) {
    const failure = e as Esbuild.BuildFailure;
    const first = failure.errors?.[0];
    if (!first) throw e;
    const where = first.location ? `${first.location.file}:${first.location.line}:${first.location.column + 1}: ` : `${path.relative(root, abs)}: `;
    throw badRequest('script_compile_error', `${where}${first.text}`, { path: path.relative(root, abs).split(path.sep).join('/'), line: first.location?.line ?? null });
  }
  const js = result.outputFiles.find((f) => f.path.endsWith('.mjs'))!;
  const mapFile = result.outputFiles.find((f) => f.path.endsWith('.map'))!;
  const hash = crypto.createHash('sha256').update(js.contents).digest('hex').slice(0, 32);
  // The map's comment would point at script.mjs.map, which is never written: drop it.
  const file = writeModule(outDir, hash, js.text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'));
  const payload = JSON.parse(mapFile.text) as { sources: string[] };
  const sources = payload.sources.map((s) => path.relative(root, path.resolve(outDir, s)).split(path.sep).join('/'));
  return { url: pathToFileURL(file).href, file, map: new SourceMap({ ...payload, sources } as never), sources };
}

/** A map source as a project-relative path (Node may hand it back as a file URL or as written). */
function sourceName(compiled: CompiledScript, source: string): string {
  if (compiled.sources.includes(source)) return source;
  const outDir = path.dirname(compiled.file);
  const abs = source.startsWith('file:') ? fileURLToPath(source) : path.resolve(outDir, source);
  // .dp/scripts/ is two folders below the project root.
  const root = path.resolve(outDir, '..', '..');
  const rel = path.relative(root, abs).split(path.sep).join('/');
  return rel.startsWith('..') ? path.basename(abs) : rel;
}

/**
 * The stack of an error thrown by a script, trimmed to the script's own frames and mapped to its
 * sources: `Error: boom\n    at load (ingest/events.ts:4:9)`. dp's frames and Node's internals
 * are dropped (they say nothing to the script's author and would show the server's paths).
 */
export function scriptStack(error: unknown, compiled: CompiledScript): string | undefined {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return undefined;
  const head = `${error.name}: ${error.message}`;
  const frames: string[] = [];
  const frame = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;
  for (const line of error.stack.split('\n').slice(1)) {
    const m = frame.exec(line);
    if (!m) continue;
    const [, fn, location, l, c] = m;
    if (location !== compiled.url && location !== compiled.file) continue;
    const entry = compiled.map.findEntry(Number(l) - 1, Number(c) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
    let where = `${location}:${l}:${c}`;
    if (entry.originalSource !== undefined && entry.originalLine !== undefined) {
      where = `${sourceName(compiled, entry.originalSource)}:${entry.originalLine + 1 + (compiled.lineOffset ?? 0)}:${(entry.originalColumn ?? 0) + 1}`;
    } else where = compiled.sources[0] ?? 'script';
    frames.push(`    at ${fn ? `${fn} (${where})` : where}`);
  }
  return [head, ...frames].join('\n');
}

/**
 * Compiles a notebook `code`/`ingest` cell: its text is the body of `async (ctx) => {}` with
 * `db`, `log`, `config`, `env`, `secrets` and `signal` in scope (TypeScript allowed; no imports).
 * `label` (`notebooks/a.dpnb#cell2`) names it in errors and stacks.
 */
export async function compileCell(root: string, label: string, source: string): Promise<CompiledScript> {
  const outDir = path.join(root, '.dp', 'scripts');
  const wrapped = `export default async function cell(ctx: any) { const { db, log, config, env, secrets, signal } = ctx;\n${source}\n}\n`;
  let out: Esbuild.TransformResult;
  try {
    out = await esbuild().transform(wrapped, {
      loader: 'ts',
      format: 'esm',
      target: 'node20',
      sourcemap: 'external',
      sourcefile: label,
      banner: `const console = globalThis[Symbol.for('dp.streams.scriptConsole')] ?? globalThis.console;`,
      logLevel: 'silent',
    });
  } catch (e) {
    const first = (e as Esbuild.TransformFailure).errors?.[0];
    if (!first) throw e;
    // Line 1 of the wrapped text is the wrapper: the cell's own lines start at 2.
    const line = first.location ? first.location.line - 1 : null;
    throw badRequest('script_compile_error', `${label}${line ? ` line ${line}` : ''}: ${first.text}`, { path: label.split('#')[0], line });
  }
  const hash = crypto.createHash('sha256').update(out.code).digest('hex').slice(0, 32);
  const file = writeModule(outDir, hash, out.code);
  const payload = JSON.parse(out.map) as { sources: string[] };
  // The wrapper line shifts the cell by one (lineOffset): line 2 of the wrapped text is the cell's line 1.
  return { url: pathToFileURL(file).href, file, map: new SourceMap({ ...payload, sources: [label] } as never), sources: [label], lineOffset: -1 };
}
