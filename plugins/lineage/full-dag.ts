/**
 * The full DAG (GET /api/dag/full): models plus everything that feeds or reads them.
 *
 * Node ids are relation names (`schema.name`) for relations — sources, seeds, imports,
 * models — so an edge from a model's `depends_on` needs no translation; scripts are
 * identified by their project path (`ingest/events.ts`) and exposures by `exposure:<name>`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MIN_SECRET_LENGTH, readNotebook, schemaHiddenFrom, walkProjectFiles, withEnvReferences, type DagEdge, type DagNode, type ExposureConfig, type ModelInfo, type ProjectInfo, type Role, type SeedInfo, type SourceConfig } from '../../sdk/index.js';

/** The schema the import wizard writes to: every table in it is an `import` node. */
export const IMPORT_SCHEMA = 'imports';

/** Script kinds scanned in `ingest/` (notebooks hold their SQL in cell sources). */
const INGEST_EXTENSIONS = new Set(['.ts', '.js', '.mjs', '.py', '.sql', '.dpnb']);

export interface FullDagInput {
  models: ModelInfo[];
  seeds: SeedInfo[];
  sources: SourceConfig[];
  exposures: ExposureConfig[];
  /** `ingest/...` project path → file text. */
  ingestScripts: Array<{ path: string; text: string }>;
  /** `schema.table` of imported tables present in the database (every table of `imports`, and those the import wizard recorded). */
  importTables: string[];
}

const CREATE_TABLE = /\bCREATE\s+(?:OR\s+REPLACE\s+)?(TEMP\s+|TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?((?:"[^"]+"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"[^"]+"|[A-Za-z_][\w$]*)){0,2})/gi;
const INSERT_INTO = /\bINSERT\s+(?:OR\s+(?:REPLACE|IGNORE)\s+)?INTO\s+((?:"[^"]+"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"[^"]+"|[A-Za-z_][\w$]*)){0,2})/gi;

/** Relations a script writes, found by scanning for CREATE TABLE and INSERT INTO (temporary tables excluded). */
export function ingestTargets(text: string): string[] {
  const found: string[] = [];
  const add = (raw: string) => {
    const parts = raw.split(/\s*\.\s*/).map((p) => (p.startsWith('"') ? p.slice(1, -1) : p));
    const name = (parts.length === 1 ? ['main', parts[0]!] : parts.slice(-2)).join('.');
    if (!found.some((f) => f.toLowerCase() === name.toLowerCase())) found.push(name);
  };
  for (const m of text.matchAll(CREATE_TABLE)) if (!m[1]) add(m[2]!);
  for (const m of text.matchAll(INSERT_INTO)) add(m[1]!);
  return found;
}

/** Files under `<root>/ingest` with a script extension, as project paths and text. */
export function readIngestScripts(project: ProjectInfo): Array<{ path: string; text: string }> {
  return walkProjectFiles(project, 'ingest', { extensions: [...INGEST_EXTENSIONS] }).map((f) => {
    const text = fs.readFileSync(f.abs, 'utf8');
    return { path: f.path, text: f.name.endsWith('.dpnb') ? notebookText(text, f.path) : text };
  });
}

/** A notebook's cell sources as one text; a file that is not a notebook is scanned as it is. */
function notebookText(json: string, file: string): string {
  try {
    return readNotebook(json, file)
      .cells.map((c) => c.source)
      .join('\n');
  } catch {
    return json;
  }
}

export function buildFullDag(input: FullDagInput): { nodes: DagNode[]; edges: DagEdge[] } {
  const nodes: DagNode[] = [];
  const byId = new Map<string, DagNode>();
  const edges: DagEdge[] = [];
  const addNode = (node: DagNode) => {
    if (byId.has(node.id.toLowerCase())) return byId.get(node.id.toLowerCase())!;
    byId.set(node.id.toLowerCase(), node);
    nodes.push(node);
    return node;
  };
  const addEdge = (source: string, target: string) => {
    if (!edges.some((e) => e.source === source && e.target === target)) edges.push({ source, target });
  };
  /** The node of a relation name; an unknown relation becomes an undeclared source. */
  const relationNode = (name: string): DagNode => {
    const hit = byId.get(name.toLowerCase());
    if (hit) return hit;
    if (!name.includes('.')) {
      const bare = nodes.filter((n) => n.type !== 'ingest' && n.type !== 'exposure' && String(n.id).toLowerCase().endsWith('.' + name.toLowerCase()));
      if (bare.length === 1) return bare[0]!;
    }
    const [schema, table] = name.includes('.') ? [name.slice(0, name.lastIndexOf('.')), name.slice(name.lastIndexOf('.') + 1)] : ['main', name];
    return addNode({ id: `${schema}.${table}`, type: 'source', label: `${schema}.${table}`, schema, name: table, declared: false });
  };

  for (const m of input.models) {
    addNode({ id: m.full_name, type: m.kind ?? (m.materialized === 'view' ? 'view' : 'table'), label: m.full_name, name: m.name, schema: m.schema, materialized: m.materialized, path: m.path });
  }
  for (const s of input.seeds) addNode({ id: s.full_name, type: 'seed', label: s.full_name, name: s.name, schema: s.schema, path: s.path });
  for (const src of input.sources) {
    for (const t of src.tables) {
      const id = `${src.schema}.${t.name}`;
      addNode({
        id,
        type: 'source',
        label: id,
        source: src.name,
        schema: src.schema,
        name: t.name,
        description: t.description ?? src.description ?? '',
        declared: true,
        // What the catalog and freshness pages show beside the node.
        connection: src.connection ?? null,
        freshness_hours: src.freshness_hours ?? null,
        loaded_at_column: t.loaded_at_column ?? null,
      });
    }
  }
  for (const t of input.importTables) {
    const name = t.slice(t.indexOf('.') + 1);
    addNode({ id: t, type: 'import', label: t, schema: t.slice(0, t.indexOf('.')), name });
  }
  for (const script of input.ingestScripts) {
    const targets = ingestTargets(script.text);
    addNode({ id: script.path, type: 'ingest', label: path.posix.basename(script.path), path: script.path, targets });
    for (const t of targets) addEdge(script.path, relationNode(t).id);
  }
  for (const m of input.models) for (const d of m.depends_on) addEdge(relationNode(d).id, m.full_name);
  for (const e of input.exposures) {
    const id = `exposure:${e.name}`;
    addNode({ id, type: 'exposure', label: e.name, name: e.name, description: e.description ?? '', owner: e.owner ?? null, exposure_type: e.type ?? null, url: e.url ?? null });
    for (const d of e.depends_on ?? []) addEdge(relationNode(d).id, id);
  }
  return { nodes, edges };
}

const VAR_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** Node fields that name relations or files: they are what the project really uses, never rewritten. */
const STRUCTURAL_FIELDS = new Set(['id', 'label', 'schema', 'name', 'path', 'type', 'targets']);

/**
 * Puts `${VAR}` references back where project.yml wrote them. The kernel expands `.env` values
 * into the configuration the plugin reads, and an exposure URL or description with a token in it
 * must not hand that token to every viewer: each free-text node field that equals the expansion of
 * a string project.yml holds is shown as written (`https://bi/?key=${BI_TOKEN}`); `written` is
 * project.yml as written, from the live config (ctx.config.asWritten()).
 */
export function withVarReferences(dag: { nodes: DagNode[]; edges: DagEdge[] }, projectAsWritten: unknown, env: Readonly<Record<string, string>>): { nodes: DagNode[]; edges: DagEdge[] } {
  const written = new Map<string, string>();
  const collect = (value: unknown): void => {
    if (typeof value === 'string') {
      if (!value.includes('${')) return;
      const expanded = value.replace(VAR_REFERENCE, (whole, name: string) => (Object.prototype.hasOwnProperty.call(env, name) ? env[name] : whole));
      if (expanded !== value) written.set(expanded, value);
    } else if (Array.isArray(value)) value.forEach(collect);
    else if (value && typeof value === 'object') Object.values(value).forEach(collect);
  };
  collect(projectAsWritten);
  // A value that reached a node another way (a default, a concatenation) is still never shown.
  const asWritten = (value: string): string => written.get(value) ?? withEnvReferences(value, env);
  if (written.size === 0 && !Object.values(env).some((v) => v.length >= MIN_SECRET_LENGTH)) return dag;
  const nodes = dag.nodes.map((node) => {
    const out: DagNode = { ...node };
    for (const [key, value] of Object.entries(node)) if (typeof value === 'string' && !STRUCTURAL_FIELDS.has(key)) out[key] = asWritten(value);
    return out;
  });
  return { nodes, edges: dag.edges };
}

/** Whether a relation name (`schema.table`) is hidden from a role (schemaHiddenFrom). */
export function hiddenRelation(name: string, role: Role): boolean {
  const dot = name.indexOf('.');
  return dot > 0 && schemaHiddenFrom(name.slice(0, dot), role);
}

/** The DAG without the relations hidden from the caller's role. */
export function withoutInternal(dag: { nodes: DagNode[]; edges: DagEdge[] }, role: Role): { nodes: DagNode[]; edges: DagEdge[] } {
  const isInternal = (id: string) => hiddenRelation(id, role);
  return {
    nodes: dag.nodes.filter((n) => !isInternal(String(n.id))).map((n) => (Array.isArray(n.targets) ? { ...n, targets: (n.targets as string[]).filter((t) => !isInternal(t)) } : n)),
    edges: dag.edges.filter((e) => !isInternal(e.source) && !isInternal(e.target)),
  };
}
