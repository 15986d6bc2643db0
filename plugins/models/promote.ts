/**
 * Notebook ↔ model files. `promote` turns the last SQL cell of a notebook (or a .sql file, or SQL
 * text) into transform/<schema>/<name>.sql; `debug` writes a notebook that queries a model's
 * upstreams and the model itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, conflict, notFound, qualified, readNotebook, withReferences, type NotebookCell, type PluginContext } from '../../sdk/index.js';
import { findModel } from './dag.js';
import { assertAbsent, checkMaterialized, checkName, modelFileText, modelPath } from './files.js';
import type { ModelsEngine } from './service.js';
import { statementBody } from './sqltext.js';

/**
 * The SQL to promote: the last non-empty SQL cell of a .dpnb, a .sql file's text, or the input
 * itself. `insideProjectOnly` is set for a logged-in caller (the CLI beside a server with auth on):
 * the file must then resolve inside the project, as a file route would require.
 */
export function promotedSql(ctx: PluginContext, input: string, insideProjectOnly = false): { sql: string; from: string } {
  const looksLikePath = /\.(dpnb|sql)$/i.test(input.trim()) && !/\s/.test(input.trim());
  if (looksLikePath) {
    const rel = input.trim();
    // A relative path is looked up from the working directory, then from the project root.
    const candidates = insideProjectOnly ? [ctx.project.resolve(rel)] : [path.resolve(process.cwd(), rel), path.resolve(ctx.project.root, rel)];
    const file = candidates.find((p) => fs.existsSync(p) && fs.statSync(p).isFile());
    if (!file) throw notFound('file_not_found', `No file ${rel}`, { path: rel });
    if (/\.dpnb$/i.test(rel)) {
      const cells = readNotebook(fs.readFileSync(file, 'utf8'), rel).cells;
      const last = cells.map((c, i) => (c.type === 'sql' && c.source.trim() !== '' ? i : -1)).reduce((a, b) => Math.max(a, b), -1);
      if (last < 0) throw badRequest('no_sql_cell', `${rel} has no SQL cell to promote`, { path: rel });
      // The cell may read earlier cells by their id: the model gets them as CTEs, as the notebook ran it.
      return { sql: withReferences(cells, last).sql, from: `${rel} (last SQL cell)` };
    }
    return { sql: fs.readFileSync(file, 'utf8'), from: rel };
  }
  return { sql: input, from: 'SQL text' };
}

export interface PromoteOptions {
  input: string;
  name: string;
  schema: string;
  materialized?: string;
  force?: boolean;
  /** Read an input file only from inside the project (a logged-in caller). */
  insideProjectOnly?: boolean;
}

export async function writeModel(
  ctx: PluginContext,
  engine: ModelsEngine,
  opts: { name: string; schema: string; materialized: string; sql: string; overwrite?: boolean },
): Promise<{ path: string; model: string }> {
  checkName(opts.name, 'name', 'Model name');
  checkName(opts.schema, 'schema_name', 'Schema');
  checkMaterialized(opts.materialized);
  if (!opts.sql || opts.sql.trim() === '') throw badRequest('invalid_sql', 'The model SQL is empty', { field: 'sql' });
  const rel = modelPath(opts.schema, opts.name);
  if (!opts.overwrite) assertAbsent(ctx, rel);
  const parsed = await ctx.db.parse(statementBody(opts.sql));
  if (!parsed.ok) {
    throw badRequest('invalid_sql', parsed.notSelect ? 'A model must be one SELECT statement' : `The SQL does not parse: ${parsed.error}`, { field: 'sql' });
  }
  if (parsed.tree.statements.length !== 1) throw badRequest('invalid_sql', 'A model must be exactly one SELECT statement', { field: 'sql' });
  const other = (await engine.discovery.modelFiles()).find((f) => f.name.toLowerCase() === opts.name.toLowerCase() && f.path !== rel);
  if (other) throw conflict('duplicate_model', `A model named '${opts.name}' already exists: ${other.path}`, { field: 'name', path: other.path });
  ctx.project.writeFile(rel, modelFileText(opts.sql, opts.materialized, opts.schema));
  return { path: rel, model: `${opts.schema}.${opts.name}` };
}

export async function promote(ctx: PluginContext, engine: ModelsEngine, opts: PromoteOptions) {
  const { sql, from } = promotedSql(ctx, opts.input, opts.insideProjectOnly);
  const written = await writeModel(ctx, engine, { name: opts.name, schema: opts.schema, materialized: opts.materialized ?? 'table', sql, overwrite: opts.force });
  return { ...written, from };
}

const SAMPLE_LIMIT = 100;

export async function debugNotebook(ctx: PluginContext, engine: ModelsEngine, modelName: string): Promise<{ path: string; cells: NotebookCell[] }> {
  const graph = await engine.graph();
  const m = findModel(graph, modelName);
  if (!m) throw notFound('model_not_found', `No model named '${modelName}'`, { model: modelName });
  const { schema, name } = m.info;
  const cells: NotebookCell[] = [
    {
      type: 'markdown',
      source: `# Debug ${m.info.full_name}\nGenerated from \`${m.info.path}\` (${m.info.materialized}). Upstreams: ${m.upstream.length ? m.upstream.join(', ') : 'none'}.`,
    },
  ];
  for (const up of m.upstream) {
    const [s, t] = up.split('.');
    cells.push({ type: 'sql', source: `-- upstream ${up}\nSELECT * FROM ${qualified(s, t)} LIMIT ${SAMPLE_LIMIT}` });
  }
  const body = m.file.body
    .split('\n')
    .filter((l) => !/^\s*--\s*@?(config|depends_on|assert)\b/.test(l))
    .join('\n')
    .trim();
  cells.push({ type: 'sql', source: `-- the model's SQL, run fresh\n${body}` });
  cells.push({ type: 'sql', source: `-- the materialized ${m.info.materialized}\nSELECT * FROM ${qualified(schema, name)} LIMIT ${SAMPLE_LIMIT}` });
  cells.push({ type: 'sql', source: `SELECT count(*) AS row_count FROM ${qualified(schema, name)}` });
  const rel = `notebooks/debug_${schema}_${name}.dpnb`;
  ctx.project.writeFile(rel, JSON.stringify({ cells }, null, 2) + '\n');
  return { path: rel, cells };
}
