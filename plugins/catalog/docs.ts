/**
 * Generated documentation of the project (SPEC "Documentation"): every model with its
 * description, columns with their types and lineage, seeds, sources, exposures, and the sections
 * other plugins write for their own files through `catalog.docs` (metrics, contracts).
 * `structuredDocs` is the JSON (`GET /api/docs/structured`, the UI's docs page); `renderMarkdown`
 * writes the same content as one markdown document (`GET /api/docs/markdown`, `dp docs`). No
 * timestamp goes in, so `dp docs --out` under git changes only when the project does.
 *
 * A model's description is its leading comment block: the `--` lines before the first line of SQL
 * that are not directives (`@config`, `@depends_on`, `@assert`, legacy `depends_on:` / `assert:`).
 */
import {
  errorMessage,
  markdownCode as code,
  markdownCodes as codes,
  schemaHiddenFrom,
  withEnvReferences,
  type ColumnSource,
  type DocReader,
  type DocSection,
  type DocSectionContent,
} from '../../sdk/index.js';
import { listExposures, listSources, shownAsWritten, type CatalogDeps, type CatalogReader, type ExposureEntry, type SourceEntry } from './catalog.js';

const DIRECTIVE = /^(@\w+|depends_on\s*:|assert\s*:)/i;

/** The leading comment block of a model file, directives left out. */
export function modelDescription(sql: string): string {
  const lines: string[] = [];
  for (const raw of sql.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) {
      if (lines.length && lines[lines.length - 1] !== '') lines.push('');
      continue;
    }
    if (!line.startsWith('--')) break;
    const text = line.replace(/^--+\s?/, '');
    if (DIRECTIVE.test(text.trim())) continue;
    lines.push(text.trimEnd());
  }
  return lines.join('\n').trim();
}

export interface DocColumn {
  name: string;
  /** DuckDB type when the model is built, else null. */
  type: string | null;
  nullable: boolean | null;
  /** Upstream columns it derives from; [] for a computed column. */
  lineage: ColumnSource[];
}

export interface DocModel {
  full_name: string;
  name: string;
  schema: string;
  materialized: string;
  path: string;
  description: string;
  depends_on: string[];
  /** Models that read this one. */
  used_by: string[];
  /** Exposures that depend on it. */
  exposures: string[];
  /** True when the warehouse holds it (columns then carry types). */
  built: boolean;
  columns: DocColumn[];
  assertions: string[];
  lineage_error?: string;
  /** Per contributed section (`contracts`, `metrics`): the names of its entries about this model. */
  [section: string]: unknown;
}

export interface StructuredDocs {
  project: string;
  /** models, seeds, sources, exposures, then one count per contributed section. */
  counts: Record<string, number>;
  models: DocModel[];
  seeds: Array<{ full_name: string; path: string; columns: Array<{ name: string; type: string }> }>;
  sources: SourceEntry[];
  exposures: ExposureEntry[];
  /** The contributed sections, in order, for renderMarkdown (not part of the JSON answer). */
  sections?: Array<{ section: DocSection; content: DocSectionContent }>;
  /** Per contributed section: its entries (`metrics`, `contracts`), and any extra keys (`metric_errors`). */
  [section: string]: unknown;
}

export async function structuredDocs(deps: CatalogDeps, reader: CatalogReader): Promise<StructuredDocs> {
  const { contributions } = deps;
  const role = reader.caller.role;
  const { ctx } = deps;
  const env = ctx.env;
  const hidden = (relation: string) => {
    const dot = relation.indexOf('.');
    return dot > 0 && schemaHiddenFrom(relation.slice(0, dot), role);
  };
  const docReader: DocReader = { caller: reader.caller, hidden };
  const models = (await deps.models().list()).filter((m) => !hidden(m.full_name));
  const seeds = await deps.models().seeds();
  const sources = await listSources(deps, reader);
  const exposures = await listExposures(deps);
  const sections: Array<{ section: DocSection; content: DocSectionContent }> = [];
  for (const c of contributions) if (c.section) sections.push({ section: c.section, content: await c.section.collect(docReader) });
  sections.sort((a, b) => a.section.order - b.section.order);
  const columnLineage = contributions.find((c) => c.columnLineage)?.columnLineage;

  const live = await ctx.db.catalog.allColumns({ includeInternal: true });
  const columnsOf = new Map<string, Array<{ name: string; type: string; nullable: boolean }>>();
  for (const c of live) {
    const key = `${c.schema}.${c.table}`.toLowerCase();
    if (!columnsOf.has(key)) columnsOf.set(key, []);
    columnsOf.get(key)!.push({ name: c.name, type: c.type, nullable: c.nullable });
  }

  const docs: DocModel[] = [];
  for (const m of models) {
    const key = m.full_name.toLowerCase();
    let lineage: Record<string, ColumnSource[]> = {};
    let lineageError: string | undefined;
    try {
      if (columnLineage) lineage = await columnLineage(m.full_name);
      else lineageError = 'the lineage plugin is disabled';
    } catch (e) {
      lineageError = errorMessage(e);
    }
    const visibleSources = (sources: ColumnSource[]) => sources.filter((s) => !hidden(s.source_table));
    const built = columnsOf.get(key);
    const columns: DocColumn[] = built
      ? built.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable, lineage: visibleSources(lineage[c.name] ?? Object.entries(lineage).find(([k]) => k.toLowerCase() === c.name.toLowerCase())?.[1] ?? []) }))
      : Object.entries(lineage).map(([name, srcs]) => ({ name, type: null, nullable: null, lineage: visibleSources(srcs) }));
    docs.push({
      full_name: m.full_name,
      name: m.name,
      schema: m.schema,
      materialized: m.materialized,
      path: m.path,
      description: modelDescription(m.sql),
      depends_on: m.depends_on.filter((d) => !hidden(d)),
      used_by: models.filter((o) => o.depends_on.some((d) => d.toLowerCase() === key)).map((o) => o.full_name),
      exposures: exposures.filter((e) => e.depends_on.some((d) => d.toLowerCase() === key || d.toLowerCase() === m.name.toLowerCase())).map((e) => e.name),
      built: Boolean(built),
      columns,
      assertions: m.assertions,
      ...Object.fromEntries(sections.map(({ section, content }) => [section.key, content.byModel.get(key) ?? []])),
      ...(lineageError ? { lineage_error: lineageError } : {}),
    });
  }

  const structured = shownAsWritten(
    {
      project: ctx.project.config.name,
      counts: {
        models: docs.length,
        seeds: seeds.length,
        sources: sources.reduce((n, s) => n + s.tables.length, 0),
        exposures: exposures.length,
        ...Object.fromEntries(sections.map(({ section, content }) => [section.key, content.entries.length])),
      },
      models: docs,
      seeds: seeds.map((s) => ({ full_name: s.full_name, path: s.path, columns: (columnsOf.get(s.full_name.toLowerCase()) ?? []).map(({ name, type }) => ({ name, type })) })),
      sources,
      exposures,
      ...Object.fromEntries(sections.flatMap(({ section, content }) => [[section.key, content.entries], ...Object.entries(content.extra ?? {})])),
    } as StructuredDocs,
    env,
  );
  // Not enumerable: the JSON answer holds the sections' data, not their renderers.
  Object.defineProperty(structured, 'sections', { value: sections, enumerable: false });
  return structured;
}

/** A markdown table cell: pipes escaped, line breaks as spaces. */
function cell(value: unknown): string {
  return String(value ?? '')
    .replace(/\|/g, '\\|')
    .replace(/\r?\n/g, ' ');
}


function table(header: string[], rows: unknown[][]): string[] {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)];
}

/** One markdown document of the whole project. */
export function renderMarkdown(docs: StructuredDocs, env: Readonly<Record<string, string>>): string {
  const out: string[] = [];
  const c = docs.counts;
  out.push(`# ${docs.project}`, '');
  const sections = docs.sections ?? [];
  const counted = sections.map(({ section }) => `${c[section.key] ?? 0} ${section.key}`);
  out.push(`Documentation generated by \`dp docs\`: ${[`${c.models} models`, `${c.seeds} seeds`, `${c.sources} source tables`, `${c.exposures} exposures`, ...counted].join(', ')}.`, '');

  out.push('## Models', '');
  if (!docs.models.length) out.push('No models.', '');
  for (const m of docs.models) {
    out.push(`### ${m.full_name}`, '');
    if (m.description) out.push(m.description, '');
    out.push(`- Materialized: ${m.materialized}${m.built ? '' : ' (not built yet)'}`);
    out.push(`- File: ${code(m.path)}`);
    out.push(`- Depends on: ${codes(m.depends_on)}`);
    out.push(`- Used by: ${codes(m.used_by)}`);
    if (m.exposures.length) out.push(`- Exposures: ${m.exposures.join(', ')}`);
    if (m.assertions.length) out.push(`- Assertions: ${codes(m.assertions)}`);
    for (const { section } of sections) {
      const names = (m[section.key] as string[] | undefined) ?? [];
      if (names.length) out.push(`- ${section.title}: ${names.join(', ')}`);
    }
    out.push('');
    if (m.columns.length) {
      out.push(
        ...table(
          ['column', 'type', 'comes from'],
          m.columns.map((col) => [col.name, col.type ?? '', col.lineage.length ? col.lineage.map((s) => `${s.source_table}.${s.source_column}`).join(', ') : 'computed']),
        ),
        '',
      );
    }
    if (m.lineage_error) out.push(`Lineage unavailable: ${m.lineage_error}`, '');
  }

  out.push('## Seeds', '');
  if (!docs.seeds.length) out.push('No seeds.', '');
  for (const s of docs.seeds) {
    out.push(`- ${code(s.full_name)} from ${code(s.path)}${s.columns.length ? `: ${s.columns.map((col) => `${col.name} ${col.type}`).join(', ')}` : ' (not loaded yet)'}`);
  }
  if (docs.seeds.length) out.push('');

  out.push('## Sources', '');
  if (!docs.sources.length) out.push('No sources.', '');
  for (const s of docs.sources) {
    out.push(`### ${s.name} (schema ${code(s.schema)})`, '');
    if (s.description) out.push(s.description, '');
    const facts = [s.connection ? `connection ${code(s.connection)}` : '', s.freshness_hours !== undefined ? `fresh within ${s.freshness_hours} h` : ''].filter(Boolean);
    if (facts.length) out.push(`- ${facts.join('; ')}`, '');
    out.push(
      ...table(
        ['table', 'description', 'loaded at column', 'rows'],
        s.tables.map((t) => [t.name, t.description ?? '', t.loaded_at_column ?? '', t.exists ? (t.rows ?? 'view') : 'not in the warehouse']),
      ),
      '',
    );
    for (const t of s.tables) {
      if (t.columns?.length) out.push(`Columns of ${code(`${s.schema}.${t.name}`)}: ${t.columns.map((col) => `${col.name}${col.description ? ` (${col.description})` : ''}`).join(', ')}`, '');
    }
  }

  out.push('## Exposures', '');
  if (!docs.exposures.length) out.push('No exposures.', '');
  for (const e of docs.exposures) {
    out.push(`### ${e.name}`, '');
    if (e.description) out.push(e.description, '');
    if (e.type) out.push(`- Type: ${e.type}`);
    if (e.owner) out.push(`- Owner: ${e.owner}`);
    if (e.url) out.push(`- URL: ${e.url}`);
    out.push(`- Depends on: ${codes(e.depends_on)}`);
    if (e.unknown_dependencies.length) out.push(`- Not defined in the project: ${codes(e.unknown_dependencies)}`);
    out.push('');
  }

  for (const { section, content } of sections) {
    out.push(`## ${section.title}`, '');
    if (!content.entries.length) out.push(`No ${section.key}.`, '');
    out.push(...section.markdown(content));
  }
  return withEnvReferences(out.join('\n'), env);
}
