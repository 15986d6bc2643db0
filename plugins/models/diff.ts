/**
 * Model-level diff: re-runs each model's SQL into a temporary table on a private connection and
 * compares it with the materialized relation (in the model's schema, or `target_schema`).
 * Rows are matched by key when the model names one (`@config unique_key=col` or an
 * `@assert unique(col)`), otherwise as whole rows (multiset difference), so `modified` is only
 * known with a key. `full` adds up to 50 sample rows of each kind of change.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, errorMessage, qualified, quoteIdent, quoteLiteral, type DbConnection, type PluginContext } from '../../sdk/index.js';
import { keyOf, selectModels, type GraphModel } from './dag.js';
import type { ModelsEngine } from './service.js';

export interface DiffOptions {
  targets?: string[] | null;
  target_schema?: string | null;
  full?: boolean;
  /** Limit to models whose files differ from this git branch. */
  against?: string | null;
  /**
   * Another build of the project (a DuckDB file inside the project, e.g. the main branch's build
   * in CI): each model is compared with the relation of the same name there instead of the one
   * in this database. Attached read-only for the comparison.
   */
  against_db?: string | null;
}

export interface ColumnInfo {
  name: string;
  type: string;
}

export interface ModelDiff {
  model: string;
  compared_with: string;
  status: 'changed' | 'unchanged' | 'new' | 'error';
  key: string[] | null;
  rows_before: number | null;
  rows_after: number | null;
  added: number | null;
  removed: number | null;
  modified: number | null;
  schema_change: { added: ColumnInfo[]; removed: ColumnInfo[]; type_changed: Array<{ name: string; before: string; after: string }> } | null;
  error?: string;
  samples?: { added: unknown[][]; removed: unknown[][]; modified: unknown[][]; columns: string[] };
}

const SAMPLE_ROWS = 50;

/** Model files that differ between HEAD and `branch` (`git diff --name-only <branch>...HEAD -- transform/`). */
export function changedModelPaths(projectRoot: string, branch: string): Set<string> {
  if (!branch || branch.startsWith('-') || /\s/.test(branch)) throw badRequest('invalid_branch', `'${branch}' is not a branch name`, { field: 'against' });
  const git = (args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    git(['rev-parse', '--is-inside-work-tree']);
  } catch {
    throw badRequest('not_a_git_repository', '--against needs a git repository, and the project folder is not inside one', { field: 'against' });
  }
  try {
    git(['rev-parse', '--verify', '--quiet', `${branch}^{commit}`]);
  } catch {
    throw badRequest('unknown_branch', `git knows no branch or commit named '${branch}'`, { field: 'against', branch });
  }
  const out = git(['diff', '--name-only', '--relative', `${branch}...HEAD`, '--', 'transform/']);
  return new Set(out.split('\n').map((l) => l.trim()).filter(Boolean));
}

/** The key columns a model declares, if any. */
export function modelKey(m: GraphModel): string[] | null {
  const declared = m.info.config.unique_key;
  if (declared) return declared.split(/[,\s]+/).filter(Boolean);
  for (const a of m.info.assertions) {
    const match = /^unique\s*\(\s*([^)]+)\)\s*$/i.exec(a);
    if (match) return match[1].split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1'));
  }
  return null;
}

async function columnsOf(c: DbConnection, relation: string): Promise<ColumnInfo[]> {
  const r = await c.query(`DESCRIBE ${relation}`);
  return r.rows.map((row) => ({ name: String(row[0]), type: String(row[1]) }));
}

export async function runDiff(ctx: PluginContext, engine: ModelsEngine, options: DiffOptions): Promise<{ models: ModelDiff[]; against: string | null }> {
  const graph = await engine.graph();
  let selected = graph.models.filter((m) => selectModels(graph, options.targets ?? null).has(keyOf(m.info.full_name)));
  if (options.against) {
    const changed = changedModelPaths(ctx.project.root, options.against);
    selected = selected.filter((m) => changed.has(m.info.path));
  }
  if (options.target_schema !== undefined && options.target_schema !== null && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(options.target_schema)) {
    throw badRequest('invalid_target_schema', `target_schema '${options.target_schema}' is not a valid schema name`, { field: 'target_schema' });
  }
  const conn = await ctx.db.connect();
  const out: ModelDiff[] = [];
  let base: string | null = null;
  try {
    if (options.against_db) base = await attachBase(ctx, conn, options.against_db);
    const relations = await ctx.db.catalog.relations({ includeInternal: true, ...(base ? { database: BASE_ALIAS } : {}) });
    const existing = new Set(relations.map((r) => `${r.schema}.${r.name}`.toLowerCase()));
    for (const m of selected) out.push(await diffOne(conn, m, options, existing, base));
  } finally {
    if (base) await conn.run(`DETACH ${quoteIdent(BASE_ALIAS)}`).catch(() => undefined);
    conn.close();
  }
  return { models: out, against: options.against ?? null, ...(base ? { against_db: base } : {}) };
}

/** The catalog name the other build is attached under while diffing. */
const BASE_ALIAS = '__dp_diff_base';

/** Attaches the other build read-only; returns its project-relative path (for reports). */
async function attachBase(ctx: PluginContext, c: DbConnection, file: string): Promise<string> {
  if (file.length > 1024) throw badRequest('base_database_not_found', '--against-db: the path is too long', { field: 'against_db' });
  const abs = ctx.project.resolve(file);
  const rel = ctx.project.relative(abs);
  if (!fs.existsSync(abs) || !fs.statSync(abs).isFile()) throw badRequest('base_database_not_found', `--against-db: no database file at ${rel}`, { field: 'against_db', path: rel });
  if (path.resolve(abs) === path.resolve(ctx.project.root, ctx.project.config.database.path)) {
    throw badRequest('base_database_is_current', '--against-db names the project\'s own database; give another build', { field: 'against_db', path: rel });
  }
  try {
    await c.run(`ATTACH ${quoteLiteral(abs)} AS ${quoteIdent(BASE_ALIAS)} (READ_ONLY)`);
  } catch (e) {
    throw badRequest('base_database_unreadable', `--against-db: DuckDB cannot open ${rel}: ${errorMessage(e).split('\n')[0].replaceAll(abs, rel)}`, { field: 'against_db', path: rel });
  }
  return rel;
}

async function diffOne(c: DbConnection, m: GraphModel, options: DiffOptions, existing: Set<string>, base: string | null): Promise<ModelDiff> {
  const schema = options.target_schema || m.info.schema;
  const before = base ? `${quoteIdent(BASE_ALIAS)}.${qualified(schema, m.info.name)}` : qualified(schema, m.info.name);
  const result: ModelDiff = {
    model: m.info.full_name,
    compared_with: base ? `${base}:${schema}.${m.info.name}` : `${schema}.${m.info.name}`,
    status: 'unchanged',
    key: null,
    rows_before: null,
    rows_after: null,
    added: null,
    removed: null,
    modified: null,
    schema_change: null,
  };
  const temp = quoteIdent(`__dp_diff_${m.info.schema}_${m.info.name}`);
  try {
    if (m.file.parseError) throw new Error(m.file.parseError);
    await c.run(`CREATE OR REPLACE TEMP TABLE ${temp} AS\n${m.file.body}\n`);
    result.rows_after = Number(await c.value(`SELECT count(*) FROM ${temp}`));
    if (!existing.has(keyOf(`${schema}.${m.info.name}`))) {
      result.status = 'new';
      result.added = result.rows_after;
      return result;
    }
    result.rows_before = Number(await c.value(`SELECT count(*) FROM ${before}`));
    const colsBefore = await columnsOf(c, before);
    const colsAfter = await columnsOf(c, temp);
    const beforeByName = new Map(colsBefore.map((col) => [col.name.toLowerCase(), col]));
    const afterByName = new Map(colsAfter.map((col) => [col.name.toLowerCase(), col]));
    const schemaChange = {
      added: colsAfter.filter((col) => !beforeByName.has(col.name.toLowerCase())),
      removed: colsBefore.filter((col) => !afterByName.has(col.name.toLowerCase())),
      type_changed: colsAfter
        .filter((col) => beforeByName.has(col.name.toLowerCase()) && beforeByName.get(col.name.toLowerCase())!.type !== col.type)
        .map((col) => ({ name: col.name, before: beforeByName.get(col.name.toLowerCase())!.type, after: col.type })),
    };
    const changedSchema = schemaChange.added.length + schemaChange.removed.length + schemaChange.type_changed.length > 0;
    result.schema_change = changedSchema ? schemaChange : null;
    // Compare on the columns both sides have; a changed type compares as text.
    const common = colsAfter.filter((col) => beforeByName.has(col.name.toLowerCase()));
    const typeChanged = new Set(schemaChange.type_changed.map((t) => t.name.toLowerCase()));
    const expr = (alias: string, col: ColumnInfo) => (typeChanged.has(col.name.toLowerCase()) ? `${alias}.${quoteIdent(col.name)}::VARCHAR` : `${alias}.${quoteIdent(col.name)}`);
    const list = (alias: string) => common.map((col) => `${expr(alias, col)} AS ${quoteIdent(col.name)}`).join(', ');
    const key = modelKey(m);
    const keyUsable = key && key.every((k) => afterByName.has(k.toLowerCase()) && beforeByName.has(k.toLowerCase()));
    const samples = { added: [] as unknown[][], removed: [] as unknown[][], modified: [] as unknown[][], columns: common.map((col) => col.name) };
    if (common.length === 0) {
      result.added = result.rows_after;
      result.removed = result.rows_before;
      result.modified = 0;
    } else if (keyUsable) {
      result.key = key;
      const on = key.map((k) => `a.${quoteIdent(k)} IS NOT DISTINCT FROM b.${quoteIdent(k)}`).join(' AND ');
      const nonKey = common.filter((col) => !key.some((k) => k.toLowerCase() === col.name.toLowerCase()));
      const differs = nonKey.length ? nonKey.map((col) => `${expr('a', col)} IS DISTINCT FROM ${expr('b', col)}`).join(' OR ') : 'false';
      const addedSql = `SELECT ${list('a')} FROM ${temp} a WHERE NOT EXISTS (SELECT 1 FROM ${before} b WHERE ${on})`;
      const removedSql = `SELECT ${list('b')} FROM ${before} b WHERE NOT EXISTS (SELECT 1 FROM ${temp} a WHERE ${on})`;
      const modifiedSql = `SELECT ${list('a')} FROM ${temp} a JOIN ${before} b ON ${on} WHERE ${differs}`;
      result.added = Number(await c.value(`SELECT count(*) FROM (${addedSql})`));
      result.removed = Number(await c.value(`SELECT count(*) FROM (${removedSql})`));
      result.modified = Number(await c.value(`SELECT count(*) FROM (${modifiedSql})`));
      if (options.full) {
        samples.added = (await c.query(`${addedSql} LIMIT ${SAMPLE_ROWS}`)).rows;
        samples.removed = (await c.query(`${removedSql} LIMIT ${SAMPLE_ROWS}`)).rows;
        samples.modified = (await c.query(`${modifiedSql} LIMIT ${SAMPLE_ROWS}`)).rows;
      }
    } else {
      const addedSql = `SELECT ${list('a')} FROM ${temp} a EXCEPT ALL SELECT ${list('b')} FROM ${before} b`;
      const removedSql = `SELECT ${list('b')} FROM ${before} b EXCEPT ALL SELECT ${list('a')} FROM ${temp} a`;
      result.added = Number(await c.value(`SELECT count(*) FROM (${addedSql})`));
      result.removed = Number(await c.value(`SELECT count(*) FROM (${removedSql})`));
      result.modified = null;
      if (options.full) {
        samples.added = (await c.query(`${addedSql} LIMIT ${SAMPLE_ROWS}`)).rows;
        samples.removed = (await c.query(`${removedSql} LIMIT ${SAMPLE_ROWS}`)).rows;
      }
    }
    if (options.full) result.samples = samples;
    const changed = changedSchema || (result.added ?? 0) > 0 || (result.removed ?? 0) > 0 || (result.modified ?? 0) > 0;
    result.status = changed ? 'changed' : 'unchanged';
  } catch (e) {
    result.status = 'error';
    result.error = `${m.info.path}: ${errorMessage(e).split('\n')[0]}`;
  } finally {
    await c.run(`DROP TABLE IF EXISTS ${temp}`).catch(() => undefined);
  }
  return result;
}

const cell = (v: unknown): string => {
  const text = v === null || v === undefined ? 'NULL' : typeof v === 'object' ? JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)) : String(v);
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
};

function rowsTable(columns: string[], rows: unknown[][]): string[] {
  return [`| ${columns.map(cell).join(' | ')} |`, `|${columns.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)];
}

/**
 * The diff as markdown (a CI job summary): one line per model, then for each changed model its
 * schema change and the rows added, removed and modified (the samples of a `full` diff).
 */
export function diffMarkdown(result: { models: ModelDiff[]; against: string | null; against_db?: string }): string {
  const lines: string[] = [];
  const changed = result.models.filter((d) => d.status !== 'unchanged');
  const base = result.against_db ? ` against \`${result.against_db}\`` : '';
  lines.push(`## dp diff${base}`, '');
  lines.push(changed.length ? `${changed.length} of ${result.models.length} models differ.` : `No differences in ${result.models.length} models.`, '');
  lines.push('| model | status | rows before | rows after | added | removed | modified |', '|---|---|---|---|---|---|---|');
  for (const d of result.models) {
    const n = (v: number | null) => (v === null ? '' : String(v));
    lines.push(`| ${d.model} | ${d.status} | ${n(d.rows_before)} | ${n(d.rows_after)} | ${n(d.added)} | ${n(d.removed)} | ${d.modified === null ? (d.status === 'changed' ? 'n/a (no key)' : '') : d.modified} |`);
  }
  for (const d of changed) {
    lines.push('', `### ${d.model} (${d.status})`, '');
    if (d.error) lines.push(`Error: ${cell(d.error)}`, '');
    if (d.schema_change) {
      const sc = d.schema_change;
      const parts = [...sc.added.map((c) => `added column \`${c.name}\` ${c.type}`), ...sc.removed.map((c) => `removed column \`${c.name}\` ${c.type}`), ...sc.type_changed.map((c) => `\`${c.name}\` ${c.before} → ${c.after}`)];
      lines.push(`Schema: ${parts.join('; ')}`, '');
    }
    if (d.key) lines.push(`Rows matched by key: ${d.key.join(', ')}`, '');
    const s = d.samples;
    if (!s) continue;
    for (const [kind, rows, total] of [['Added', s.added, d.added], ['Removed', s.removed, d.removed], ['Modified (new values)', s.modified, d.modified]] as Array<[string, unknown[][], number | null]>) {
      if (!rows.length) continue;
      const shown = total !== null && total > rows.length ? ` (first ${rows.length} of ${total})` : '';
      lines.push(`**${kind} rows${shown}**`, '', ...rowsTable(s.columns, rows), '');
    }
  }
  return lines.join('\n') + '\n';
}
