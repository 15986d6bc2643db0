/**
 * Conversion between a notebook and a script (SPEC "Notebook rules": `.dpnb` ↔ script), both
 * ways without loss: from-script(to-script(n)) equals n, and to-script(from-script(s)) equals s
 * for every script to-script wrote.
 *
 * The script is a module whose default export is `async (ctx) => {}` (what `dp run` runs), with
 * `const { db, log, config, env, secrets, signal } = ctx;` and every cell after a marker line
 * `// %% [<type>]` (followed by the cell's id, outputs and metadata as JSON when it has any):
 * - code/ingest cells verbatim, `export ` at a line's start written `/*dp-export*\/ ` (a
 *   function body cannot export);
 * - sql cells as `await db.run(`...`);`, or `const <id> = await db.all(`...`);` when the cell
 *   has an id (the rows later cells read), the SQL in a template literal with \, ` and ${ escaped;
 * - markdown cells as `// ` comment lines.
 * A body line that starts like a marker (`// %%`) gets one more `%` (and loses it on the way
 * back), and so does `/*dp-export*\/` (one more `dp-`): text that looks like the markers
 * survives the round trip.
 */
import type { Notebook, NotebookCell } from './api-types.js';
import { CELL_TYPES } from './schema.js';

const HEADER = '// dp notebook script: `dp notebook from-script` turns it back into a notebook; each `// %% [type]` line starts a cell.';
const OPEN = 'export default async (ctx: any) => {';
const CONTEXT = '  const { db, log, config, env, secrets, signal } = ctx;';
const CLOSE = '};';
const METADATA = '// %% metadata ';
const MARKER = /^\/\/ %% \[([a-z]+)\](?: (.*))?$/;
const EXPORT_MARK = '/*dp-export*/ ';

/** A line that starts like a marker (`// %%`) gets one more `%`. */
function escapeLine(line: string): string {
  return line.startsWith('// %%') ? `// %${line.slice(3)}` : line;
}

function unescapeLine(line: string): string {
  return line.startsWith('// %%%') ? `// ${line.slice(4)}` : line;
}

const EXPORT_ESCAPED = /^\/\*(dp-)+export\*\//;

/** A code line: `export ` marked (a function body cannot export), the mark itself escaped with one more `dp-`. */
function codeLine(line: string): string {
  if (EXPORT_ESCAPED.test(line)) return `/*dp-${line.slice(2)}`;
  return line.startsWith('export ') ? EXPORT_MARK + line.slice('export '.length) : line;
}

function uncodeLine(line: string): string {
  if (line.startsWith(EXPORT_MARK)) return `export ${line.slice(EXPORT_MARK.length)}`;
  return /^\/\*dp-(dp-)+export\*\//.test(line) ? `/*${line.slice(5)}` : line;
}

const escapeTemplate = (text: string) => text.replace(/[\\`]|\$\{/g, (m) => `\\${m}`);
const unescapeTemplate = (text: string) => text.replace(/\\([\\`]|\$\{)/g, '$1');

function cellMeta(cell: NotebookCell): string {
  const extra: Record<string, unknown> = {};
  if (cell.id !== undefined) extra.id = cell.id;
  if (cell.outputs !== undefined) extra.outputs = cell.outputs;
  if (cell.metadata !== undefined) extra.metadata = cell.metadata;
  return Object.keys(extra).length ? ` ${JSON.stringify(extra)}` : '';
}

function bodyLines(cell: NotebookCell): string[] {
  const source = Array.isArray(cell.source) ? cell.source.join('') : cell.source;
  switch (cell.type) {
    case 'markdown':
      return source.split('\n').map((l) => (l === '' ? '//' : `// ${l}`));
    case 'sql': {
      const literal = `\`${escapeTemplate(source)}\``;
      return (cell.id ? `const ${cell.id} = await db.all(${literal});` : `await db.run(${literal});`).split('\n');
    }
    default:
      return source.split('\n').map(codeLine);
  }
}

export function notebookToScript(notebook: Notebook): string {
  const lines = [HEADER, OPEN, CONTEXT];
  if (notebook.metadata !== undefined) lines.push(METADATA + JSON.stringify(notebook.metadata));
  for (const cell of notebook.cells) {
    lines.push(`// %% [${cell.type}]${cellMeta(cell)}`);
    // Escaping comes after the cell's own rewriting, so it covers what that produced too.
    for (const l of bodyLines(cell)) lines.push(escapeLine(l));
  }
  lines.push(CLOSE);
  return lines.join('\n') + '\n';
}

export class ScriptFormatError extends Error {}

function parseCell(type: string, meta: string | undefined, body: string[], at: number): NotebookCell {
  if (!(CELL_TYPES as readonly string[]).includes(type)) throw new ScriptFormatError(`line ${at}: unknown cell type '${type}' (${CELL_TYPES.join(', ')})`);
  const cell: NotebookCell = { type: type as NotebookCell['type'], source: '' };
  let extra: { id?: string; outputs?: unknown[]; metadata?: Record<string, unknown> } = {};
  if (meta !== undefined) {
    try {
      extra = JSON.parse(meta);
    } catch {
      throw new ScriptFormatError(`line ${at}: the cell marker's JSON does not parse`);
    }
  }
  const lines = body.map(unescapeLine);
  if (type === 'markdown') {
    cell.source = lines.map((l) => (l === '//' ? '' : l.startsWith('// ') ? l.slice(3) : l)).join('\n');
  } else if (type === 'sql') {
    const text = lines.join('\n');
    const m = extra.id ? new RegExp(`^const ${extra.id} = await db\\.all\\(\`([\\s\\S]*)\`\\);$`).exec(text) : /^await db\.run\(`([\s\S]*)`\);$/.exec(text);
    if (!m) throw new ScriptFormatError(`line ${at}: a sql cell is ${extra.id ? `\`const ${extra.id} = await db.all(\`...\`);\`` : '`await db.run(`...`);`'}`);
    cell.source = unescapeTemplate(m[1]);
  } else {
    cell.source = lines.map(uncodeLine).join('\n');
  }
  if (extra.id !== undefined) cell.id = extra.id;
  if (extra.outputs !== undefined) cell.outputs = extra.outputs;
  if (extra.metadata !== undefined) cell.metadata = extra.metadata;
  return cell;
}

/**
 * A script back into a notebook: a script to-script wrote (its header and markers) gives its
 * cells back exactly; any other script becomes one code cell (the body of its default export,
 * with `ctx` rebuilt from the names a cell has, when it is written that way).
 */
export function scriptToNotebook(text: string): Notebook {
  const lines = text.replace(/\n$/, '').split('\n');
  if (lines[0] !== HEADER || lines[1] !== OPEN || lines[2] !== CONTEXT || lines[lines.length - 1] !== CLOSE) return { cells: [{ type: 'code', source: plainScriptCell(text) }] };
  const notebook: Notebook = { cells: [] };
  let i = 3;
  if (lines[i]?.startsWith(METADATA)) {
    try {
      notebook.metadata = JSON.parse(lines[i].slice(METADATA.length));
    } catch {
      throw new ScriptFormatError(`line ${i + 1}: the notebook metadata does not parse`);
    }
    i++;
  }
  const end = lines.length - 1;
  if (i < end && !MARKER.test(lines[i])) throw new ScriptFormatError(`line ${i + 1}: expected a cell marker (// %% [type])`);
  while (i < end) {
    const m = MARKER.exec(lines[i])!;
    const at = i + 1;
    const body: string[] = [];
    i++;
    while (i < end && !MARKER.test(lines[i])) body.push(lines[i++]);
    notebook.cells.push(parseCell(m[1], m[2], body, at));
  }
  return notebook;
}

/** An unmarked script as one cell: the body of `export default async (ctx) => { ... }` when it has that form, else the whole text. */
function plainScriptCell(text: string): string {
  const m = /^([\s\S]*?)export\s+default\s+async\s*(?:\(\s*ctx\b[^)]*\)|ctx)\s*=>\s*\{\n?([\s\S]*)\n?\}\s*;?\s*$/.exec(text);
  if (!m) return text.replace(/\n$/, '');
  const body = m[2].replace(/\n$/, '');
  const before = m[1].trim();
  const ctxLine = /\bctx\b/.test(body) ? 'const ctx = { db, log, config, env, secrets, signal };\n' : '';
  return `${before ? `${before}\n` : ''}${ctxLine}${body}`;
}
