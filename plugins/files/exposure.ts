/**
 * Data files are raw copies of tables: a seed CSV holds exactly what `seeds.<name>` holds before
 * any mask. A caller bound by a masking policy must not read around it through the files API, so
 * a data file is served only when no masked column of the caller is in it:
 *
 * - a file that defines a table (a seed) is refused when that table has a policy binding the
 *   caller (its own or a namesake's, as every route matches policies);
 * - any data file is refused when it names a column masked for the caller on any table (ad-hoc
 *   queries mask by column name alone, docs/decisions.md "Masking policy" rule 4): the header of a CSV/TSV, the
 *   text of any other data file (JSON keys, Parquet schema strings).
 *
 * Code and configuration (the saveable extensions, Markdown) are not data and are served as before.
 */
import path from 'node:path';
import { forbidden, MASKING_SERVICE, MODELS_SERVICE, withEnvReferences, type Caller, type PluginContext } from '../../sdk/index.js';
import { SAVEABLE_EXTENSIONS } from './rules.js';

const NOT_DATA = new Set([...SAVEABLE_EXTENSIONS, '.md']);
const DELIMITED = new Set(['.csv', '.tsv']);
/** Any delimiter DuckDB's CSV sniffer would pick: `a;b;ssn` has the column `ssn` too. */
const HEADER_DELIMITERS = /[,;\t|]/;

/** True when a file's content is data rather than code or configuration. */
export function isDataFile(rel: string): boolean {
  const base = path.posix.basename(rel);
  return !NOT_DATA.has(path.extname(base).toLowerCase()) && base !== '.env.example';
}

/** The table a seed file loads, from the models service (or the seeds/<name>.csv convention). */
async function seedTable(ctx: PluginContext, rel: string): Promise<{ schema: string; name: string } | null> {
  const models = ctx.services.find(MODELS_SERVICE);
  if (models) {
    const s = (await models.seeds().catch(() => [])).find((x) => x.path === rel);
    if (s) return { schema: s.schema, name: s.name };
  }
  const m = /^seeds\/([^/]+)\.csv$/i.exec(rel);
  return m ? { schema: 'seeds', name: m[1] } : null;
}

function headerColumns(text: string): string[] {
  const line = text.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0] ?? '';
  return line.split(HEADER_DELIMITERS).map((c) => c.trim().replace(/^"(.*)"$/, '$1').replace(/""/g, '"').trim().toLowerCase());
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Masked column names (lower case) that appear in a data file's content. */
function namesIn(rel: string, content: Buffer, masked: string[]): string[] {
  const ext = path.extname(rel).toLowerCase();
  if (DELIMITED.has(ext)) {
    const header = new Set(headerColumns(content.toString('utf8')));
    return masked.filter((m) => header.has(m));
  }
  // Binary formats (Parquet) keep column names as plain bytes: latin1 reads every byte as one character.
  const lower = content.toString('latin1').toLowerCase();
  return masked.filter((m) => new RegExp(`(^|[^a-z0-9_])${escapeRegExp(m)}($|[^a-z0-9_])`).test(lower));
}

/**
 * Throws 403 `masked_data_file` when the file requested as `rel` (really `realRel` once symlinks
 * are followed, with this content) is data holding columns masked for the caller. Without the
 * masking plugin nothing is masked.
 */
export async function assertReadableData(ctx: PluginContext, caller: Caller, file: { rel: string; realRel: string }, content: Buffer): Promise<void> {
  const { rel, realRel } = file;
  if (!isDataFile(rel) && !isDataFile(realRel)) return;
  const masking = ctx.services.find(MASKING_SERVICE);
  if (!masking) return;
  const refuse = (columns: string[], table?: string) =>
    forbidden(
      'masked_data_file',
      `'${rel}' holds columns masked for role '${caller.role}' (${columns.join(', ')}); read ${table ? `the table ${table}` : 'its table'} through the query API, where masks apply`,
      { path: rel, masked_columns: columns, ...(table ? { table } : {}) },
    );
  const seed = (await seedTable(ctx, realRel)) ?? (await seedTable(ctx, rel));
  if (seed) {
    const columns = await masking.maskedColumns(caller, seed.schema, seed.name);
    if (columns.length) throw refuse(columns, `${seed.schema}.${seed.name}`);
  }
  const names = await masking.maskedColumnNames(caller);
  if (!names.length) return;
  const found = namesIn(isDataFile(realRel) ? realRel : rel, content, names);
  if (found.length) throw refuse(found, seed ? `${seed.schema}.${seed.name}` : undefined);
}

/**
 * Shows every `.env` value in a served file as its `${NAME}` reference (withEnvReferences, as
 * `/api/dag/full` does). `.env` itself is protected, but its values also live on in copies: a
 * backup, a note, or a hard link made before dp last rewrote `.env` (the rewrite is a rename,
 * so the link keeps the old inode and is no longer recognised as `.env`). Read from the
 * secrets store on each call, so a value set since the server started is covered too.
 */
export function withSecretReferences(ctx: PluginContext, text: string): string {
  return withEnvReferences(text, Object.fromEntries(ctx.secrets.list().map(({ key }) => [key, ctx.secrets.get(key) ?? ''])));
}
