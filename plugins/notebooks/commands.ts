/** `dp notebook to-script <file.dpnb> [--out]` and `dp notebook from-script <script> [--out]` (declared in plugin.json). */
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, notFound, type PluginContext } from '../../sdk/index.js';
import { notebookToScript, ScriptFormatError, scriptToNotebook } from './convert.js';
import { notebookText } from './files.js';
import { assertNotebook, parseNotebook } from './schema.js';

/** An input path: project-relative (like `dp run`), else relative to the current folder when only that exists. */
function cliPath(ctx: PluginContext, raw: string): string {
  if (path.isAbsolute(raw)) return raw;
  const fromProject = path.resolve(ctx.project.root, raw);
  const fromCwd = path.resolve(raw);
  return !fs.existsSync(fromProject) && fs.existsSync(fromCwd) ? fromCwd : fromProject;
}

/** --out: project-relative unless absolute. */
function outPath(ctx: PluginContext, raw: unknown, fallback: string): string {
  if (raw === undefined || raw === null || raw === '') return fallback;
  return path.resolve(ctx.project.root, String(raw));
}

/** Writes atomically (temp file in the same folder, then rename). */
function writeAtomically(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

function shown(ctx: PluginContext, abs: string): string {
  const rel = path.relative(ctx.project.root, abs);
  return rel.startsWith('..') ? path.relative(process.cwd(), abs) || abs : rel;
}

export function registerCommands(ctx: PluginContext): void {
  ctx.command('notebook to-script', (args, io) => {
    const input = cliPath(ctx, String(args.file));
    if (!input.toLowerCase().endsWith('.dpnb')) throw badRequest('notebook_path_refused', `'${args.file}' is not a .dpnb notebook`, { path: String(args.file) });
    if (!fs.existsSync(input)) throw notFound('file_not_found', `No notebook '${args.file}'`, { path: String(args.file) });
    const notebook = parseNotebook(fs.readFileSync(input, 'utf8'), shown(ctx, input));
    const out = outPath(ctx, args.out, input.replace(/\.dpnb$/i, '.ts'));
    writeAtomically(out, notebookToScript(notebook));
    if (io.wantsJson) io.json({ notebook: shown(ctx, input), script: shown(ctx, out), cells: notebook.cells.length });
    else io.out(`wrote ${shown(ctx, out)} (${notebook.cells.length} cells)`);
    return 0;
  });

  ctx.command('notebook from-script', (args, io) => {
    const input = cliPath(ctx, String(args.script));
    if (!/\.(ts|js|mjs)$/i.test(input)) throw badRequest('invalid_script_for_notebook', `'${args.script}' is not a .ts, .js or .mjs script`, { path: String(args.script) });
    if (!fs.existsSync(input)) throw notFound('file_not_found', `No script '${args.script}'`, { path: String(args.script) });
    let notebook;
    try {
      notebook = assertNotebook(scriptToNotebook(fs.readFileSync(input, 'utf8')), shown(ctx, input));
    } catch (e) {
      if (e instanceof ScriptFormatError) throw badRequest('invalid_script_for_notebook', `${shown(ctx, input)} ${e.message}`, { path: shown(ctx, input) });
      throw e;
    }
    const out = outPath(ctx, args.out, input.replace(/\.(ts|js|mjs)$/i, '.dpnb'));
    writeAtomically(out, notebookText(notebook));
    if (io.wantsJson) io.json({ script: shown(ctx, input), notebook: shown(ctx, out), cells: notebook.cells.length });
    else io.out(`wrote ${shown(ctx, out)} (${notebook.cells.length} cells)`);
    return 0;
  });
}
