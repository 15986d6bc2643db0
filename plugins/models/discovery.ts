/**
 * Finds model files (transform/<schema>/<name>.sql) and seed files (seeds/*.csv), reads their
 * directives and asks DuckDB's parser for their table references. Results are cached per file by
 * (mtime, size, inode), so a repeated call costs one stat per file, and what the parser found
 * (references, errors) is kept by file content hash in `.dp/model-parse-cache.json`, so a new
 * process (every CLI command) parses only the files that changed since the last one. The parse
 * tree itself is not kept: `Discovery.tree(file)` asks for it when a caller needs it (lint).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, errorMessage, nativeDialect, SAFE_NAME, walkProjectFiles, type ParsedSql, type PluginContext, type SqlNode } from '../../sdk/index.js';
import { parseDirectives } from './directives.js';
import { nativeReferences } from './native.js';
import { readModelConfig, type ConfigProblem, type Materialization, type ModelConfig } from './materializations.js';
import { statementBody, lineAt, pivotAnalysisForm } from './sqltext.js';
import { scanTableReferences } from './reference-scan.js';
import { tableReferences, type TableRef } from './sqltree.js';

export const TRANSFORM_DIR = 'transform';
export const SEEDS_DIR = 'seeds';
export const DEFAULT_SEED_SCHEMA = 'seeds';
/** Schema of a model file placed directly in transform/ without `@config schema=`. */
export const DEFAULT_MODEL_SCHEMA = 'main';
/** `materialized` when `@config` does not say (dbt defaults to view; a workbench mostly queries tables). */
export const DEFAULT_MATERIALIZED = 'table';

export interface ModelFile {
  name: string;
  schema: string;
  full_name: string;
  materialized: Materialization;
  /** The typed @config (incremental and scd2 settings). */
  modelConfig: ModelConfig;
  /** Errors in @config (unknown keys, values outside their set), each with its line. */
  configProblems: ConfigProblem[];
  /** Project-relative path with forward slashes. */
  path: string;
  absPath: string;
  content_hash: string;
  sql: string;
  /** The statement to embed in CREATE ... AS (no trailing semicolon). */
  body: string;
  /**
   * The statement as DuckDB's parser serializes it, for analysis (dependencies, lineage, lint):
   * the body itself, or a simplified PIVOT with a stand-in IN list (see pivotAnalysisForm).
   */
  query: string;
  config: Record<string, string>;
  assertions: string[];
  /** Names from `@depends_on`/`depends_on:`, or null when dependencies come from the parser. */
  declaredDependsOn: string[] | null;
  /** `clickhouse` for a model written natively for the target (`@config dialect=clickhouse`, native.ts); null for DuckDB SQL. */
  dialect: 'clickhouse' | null;
  /** False for a native model no parser read (accepted with its `@depends_on`): what it reads is not known. */
  referencesKnown: boolean;
  directiveLines: number[];
  /** Table references DuckDB's parser found (empty when the SQL does not parse). */
  refs: TableRef[];
  parseError: string | null;
  /** 1-based line of the parse error, when DuckDB reports a position. */
  parseErrorLine: number | null;
}

export interface SeedFile {
  name: string;
  schema: string;
  full_name: string;
  path: string;
  absPath: string;
  content_hash: string;
}

interface Stamp {
  mtimeMs: number;
  size: number;
  ino: number;
}

const sameStamp = (a: Stamp, b: Stamp) => a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino;

export function sha256(data: string | Buffer): string {
  // crypto.hash (Node ≥ 20.12) hashes in one call: no Hash object per file.
  return typeof crypto.hash === 'function' ? crypto.hash('sha256', data, 'hex') : crypto.createHash('sha256').update(data).digest('hex');
}

function listFiles(project: PluginContext['project'], dir: string, ext: string, recursive: boolean): Array<{ abs: string; rel: string; stamp: Stamp }> {
  return walkProjectFiles(project, dir, { extensions: [ext], recursive }).map((f) => ({ abs: f.abs, rel: f.path, stamp: { mtimeMs: f.mtimeMs ?? 0, size: f.size ?? 0, ino: f.ino ?? 0 } }));
}

interface ParseOutcome {
  /** Whether DuckDB parsed it (as one query). */
  parses: boolean;
  refs: TableRef[];
  /** The text that parsed (differs from the body for a simplified PIVOT). */
  query: string;
  error: string | null;
  errorLine: number | null;
}

/** Puts a parse outcome on a model file. */
function setParse(file: ModelFile, outcome: ParseOutcome): void {
  file.query = outcome.query;
  // A native model the ClickHouse parser cannot read is still accepted with what @depends_on declares.
  const declaredOnly = file.dialect !== null && !outcome.parses && file.declaredDependsOn !== null;
  file.referencesKnown = file.dialect === null || outcome.parses;
  file.parseError = declaredOnly ? null : outcome.error;
  file.parseErrorLine = outcome.errorLine;
  file.refs = outcome.refs;
}

/** Where parse outcomes survive the process (dp's hidden state folder). */
export const PARSE_CACHE_FILE = '.dp/model-parse-cache.json';
/** Texts per parse round trip of a discovery: read, then parsed while the next ones are read (see Discovery.modelFiles). */
const PARSE_CHUNK = 1250;
/** How long after a parse the cache file is written (a burst of edits writes it once, never on the request). */
const CACHE_SAVE_DELAY_MS = 2000;
/** Bumped when ParseOutcome's meaning changes; a file of another format (or DuckDB version) is ignored. */
const PARSE_CACHE_FORMAT = 2;

/** Where a body's parse outcome is kept: DuckDB SQL and native SQL of the same text are read by different parsers. */
const parseKey = (file: Pick<ModelFile, 'body' | 'dialect'>) => (file.dialect ? `${file.dialect}\u0000${file.body}` : file.body);

interface ParseCacheDoc {
  format: number;
  duckdb: string;
  /** File content hash → outcome (query only when it differs from the body). */
  entries: Record<string, { parses: boolean; refs: TableRef[]; query?: string; error: string | null; errorLine: number | null }>;
}

export class Discovery {
  private models = new Map<string, { stamp: Stamp; file: ModelFile }>();
  private seedCache = new Map<string, { stamp: Stamp; file: SeedFile }>();
  private parsed = new Map<string, ParseOutcome>();
  private diskCache: { version: string; entries: ParseCacheDoc['entries'] } | null = null;
  private saveTimer: unknown = null;

  constructor(private readonly ctx: PluginContext) {}

  /**
   * Every model file, parsed. Throws on invalid names or @config values, naming the file.
   *
   * New files are read and parsed as a pipeline: each chunk of PARSE_CHUNK bodies goes to
   * DuckDB's parser as soon as it is read, and the next chunk is read while it parses, so a first
   * discovery of a large project keeps both the reading thread and the engine busy instead of
   * reading every file before parsing any. Each chunk is one query (no split over connections),
   * sent as soon as it is read: waiting for the one before would leave the engine idle whenever
   * the reading thread had not yet come back to the event loop (bench/README "Item 2").
   */
  async modelFiles(): Promise<ModelFile[]> {
    const root = this.ctx.project.resolve(TRANSFORM_DIR);
    const files = listFiles(this.ctx.project, TRANSFORM_DIR, '.sql', true);
    const out: ModelFile[] = [];
    const seen = new Set<string>();
    const fresh: ModelFile[] = [];
    const stamps = new Map<ModelFile, Stamp>();
    let disk: ParseCacheDoc['entries'] | null = null;
    const queued = new Set<string>();
    let chunk: string[] = [];
    let parsing: Promise<void> = Promise.resolve();
    const dispatch = () => {
      const bodies = chunk;
      chunk = [];
      parsing = Promise.all([parsing, this.parseBatch(bodies)]).then(() => undefined);
      // Observed now: a failed parse is rethrown where `parsing` is awaited, never left unhandled.
      parsing.catch(() => undefined);
    };
    try {
      // The walk's own stat gives each file's stamp: one stat per file per call.
      for (const { abs, rel, stamp } of files) {
        seen.add(abs);
        const hit = this.models.get(abs);
        if (hit && sameStamp(hit.stamp, stamp)) {
          out.push(hit.file);
          continue;
        }
        const file = this.readModel(abs, rel, root);
        stamps.set(file, stamp);
        fresh.push(file);
        out.push(file);
        const key = parseKey(file);
        if (this.parsed.has(key) || queued.has(key)) continue;
        disk ??= (await this.loadDiskCache()).entries;
        const kept = disk[file.content_hash];
        if (kept) this.parsed.set(key, { parses: kept.parses, refs: kept.refs, query: kept.query ?? file.body, error: kept.error, errorLine: kept.errorLine });
        else if (!file.dialect) {
          queued.add(key);
          chunk.push(file.body);
          if (chunk.length >= PARSE_CHUNK) {
            dispatch();
            // Lets a finished chunk's answer be read (and the next one start) before reading on.
            await new Promise<void>((resolve) => setImmediate(resolve));
          }
        }
      }
      if (chunk.length) dispatch();
    } finally {
      // Whatever was read or thrown, no parse is left running past this call.
      await parsing.catch(() => undefined);
    }
    await parsing;
    for (const key of [...this.models.keys()]) if (!seen.has(key)) this.models.delete(key);
    const unparsedFiles = fresh.filter((f) => !this.parsed.has(parseKey(f)));
    for (const body of new Set(unparsedFiles.filter((f) => f.dialect).map((f) => f.body))) {
      const r = await nativeReferences(body);
      this.parsed.set(parseKey({ body, dialect: 'clickhouse' }), { parses: r.parses, refs: r.refs, query: body, error: r.error, errorLine: null });
    }
    for (const file of fresh) {
      const outcome = this.parsed.get(parseKey(file));
      if (!outcome) continue;
      setParse(file, outcome);
      // Cached only once parsed, so a failed parse round trip is retried on the next call.
      this.models.set(file.absPath, { stamp: stamps.get(file)!, file });
    }
    if (queued.size || unparsedFiles.length) this.saveDiskCache();
    // Parse outcomes of bodies no file has any more are dropped.
    if (this.parsed.size > this.models.size * 2) {
      const live = new Set([...this.models.values()].map((e) => parseKey(e.file)));
      for (const body of [...this.parsed.keys()]) if (!live.has(body)) this.parsed.delete(body);
    }
    return out;
  }

  private readModel(abs: string, rel: string, root: string): ModelFile {
    const buf = fs.readFileSync(abs);
    const sql = buf.toString('utf8');
    const parts = path.relative(root, abs).split(path.sep);
    const name = path.basename(abs).replace(/\.sql$/i, '');
    const directives = parseDirectives(sql, rel);
    const schema = directives.config.schema ?? (parts.length > 1 ? parts[0] : DEFAULT_MODEL_SCHEMA);
    if (!SAFE_NAME.test(name)) {
      throw badRequest('invalid_model_name', `${rel}: model name '${name}' must be letters, digits and underscores, not starting with a digit`, { file: rel });
    }
    if (!SAFE_NAME.test(schema)) {
      throw badRequest('invalid_model_schema', `${rel}: schema '${schema}' must be letters, digits and underscores, not starting with a digit`, { file: rel });
    }
    const configProblems: ConfigProblem[] = [];
    const modelConfig = readModelConfig(directives.config, directives.configLines, configProblems);
    const body = statementBody(sql);
    return {
      name,
      schema,
      full_name: `${schema}.${name}`,
      materialized: modelConfig.materialized,
      modelConfig,
      configProblems,
      path: rel,
      absPath: abs,
      content_hash: sha256(buf),
      sql,
      body,
      query: body,
      config: directives.config,
      assertions: directives.assertions,
      declaredDependsOn: directives.dependsOn,
      dialect: nativeDialect(directives.config),
      referencesKnown: true,
      directiveLines: directives.lines,
      refs: [],
      parseError: null,
      parseErrorLine: null,
    };
  }

  /**
   * DuckDB's parser (json_serialize_sql, the same function ctx.db.parse calls) over many
   * statements in one query: a thousand single parses cost a round trip each.
   */
  private async parseBatch(bodies: string[]): Promise<void> {
    const outcomes = await this.serialize(bodies);
    // A simplified PIVOT is refused as "not a SELECT"; with a stand-in IN list it parses.
    const retry = new Map<string, string>();
    bodies.forEach((body, i) => {
      if (!outcomes[i].notSelect) return;
      const form = pivotAnalysisForm(body);
      if (form) retry.set(body, form);
    });
    const forms = [...retry.values()];
    const second = forms.length ? await this.serialize(forms) : [];
    const byForm = new Map(forms.map((f, i) => [f, second[i]]));
    bodies.forEach((body, i) => {
      let outcome = outcomes[i];
      const form = retry.get(body);
      if (form && byForm.get(form)?.parses) outcome = { ...byForm.get(form)!, query: form };
      const { notSelect: _ignored, ...kept } = outcome;
      this.parsed.set(body, { ...kept, query: outcome.parses ? outcome.query : body });
    });
  }

  /**
   * What the parser found in each text (references, or the error a model file is shown with).
   * Compact trees (no null or empty fields): the reference scan and the generic walk read them
   * the same, and nothing else does.
   */
  private async serialize(texts: string[]): Promise<Array<ParseOutcome & { notSelect: boolean }>> {
    return this.outcomes(texts, await this.ctx.db.parseMany(texts, { compact: true, split: false }));
  }

  private outcomes(texts: string[], parsed: ParsedSql[]): Array<ParseOutcome & { notSelect: boolean }> {
    return parsed.map((p, index) => {
      const text = texts[index];
      const failed = (error: string, errorLine: number | null, notSelect = false) => ({ parses: false, refs: [], query: text, notSelect, error, errorLine });
      if (!p.ok) {
        return failed(
          p.notSelect ? 'A model must be one query (SELECT, FROM, VALUES, PIVOT, UNPIVOT, a set operation): DuckDB could not read it as one' : p.error,
          p.position !== undefined ? lineAt(text, p.position) : null,
          p.notSelect,
        );
      }
      // The references straight from the parser's text, when the scan can answer for the tree.
      const scanned = scanTableReferences(p.json);
      if (scanned) {
        if (scanned.statements !== 1) return failed(`A model must be one query; this file holds ${scanned.statements} statements`, null);
        return { parses: true, refs: scanned.refs, query: text, notSelect: false, error: null, errorLine: null };
      }
      const statements = p.tree.statements ?? [];
      if (statements.length !== 1) return failed(`A model must be one query; this file holds ${statements.length} statements`, null);
      const node = statements[0].node;
      if (node?.from_table?.type === 'SHOW_REF' && node?.type === 'SELECT_NODE' && isBareShow(node)) {
        return failed('DESCRIBE, SHOW and SUMMARIZE cannot follow CREATE TABLE AS; wrap it as SELECT * FROM (DESCRIBE ...)', 1);
      }
      // Read here for the references only: no parse tree of thousands of models stays in memory.
      return { parses: true, refs: tableReferences(node), query: text, notSelect: false, error: null, errorLine: null };
    });
  }

  /** The model's parse tree (DuckDB's, through the kernel's parse cache), or null when it does not parse. */
  async tree(file: ModelFile): Promise<SqlNode | null> {
    if (file.parseError || file.dialect) return null;
    const parsed = await this.ctx.db.parse(file.query);
    return parsed.ok && parsed.tree.statements.length === 1 ? parsed.tree.statements[0].node : null;
  }

  private async loadDiskCache(): Promise<{ version: string; entries: ParseCacheDoc['entries'] }> {
    if (this.diskCache) return this.diskCache;
    const version = String(await this.ctx.db.value("SELECT library_version FROM pragma_version()"));
    let entries: ParseCacheDoc['entries'] = {};
    try {
      const doc = JSON.parse(fs.readFileSync(this.ctx.project.resolve(PARSE_CACHE_FILE), 'utf8')) as ParseCacheDoc;
      if (doc.format === PARSE_CACHE_FORMAT && doc.duckdb === version && doc.entries && typeof doc.entries === 'object') entries = doc.entries;
    } catch {
      // No cache yet, or unreadable: everything is parsed (and the cache rewritten).
    }
    this.diskCache = { version, entries };
    return this.diskCache;
  }

  /** Writes the cache file a moment from now: the request that parsed does not wait for it. */
  private saveDiskCache(): void {
    this.saveTimer ??= this.ctx.clock.setTimeout(() => this.flush(), CACHE_SAVE_DELAY_MS);
  }

  /** Writes the outcomes of the current files now, if any changed (only theirs: entries of changed files are dropped). */
  flush(): void {
    if (this.saveTimer === null) return;
    this.ctx.clock.clearTimeout(this.saveTimer);
    this.saveTimer = null;
    if (!this.diskCache) return;
    const entries: ParseCacheDoc['entries'] = {};
    for (const { file } of this.models.values()) {
      const o = this.parsed.get(parseKey(file));
      if (!o) continue;
      entries[file.content_hash] = { parses: o.parses, refs: o.refs, ...(o.query !== file.body ? { query: o.query } : {}), error: o.error, errorLine: o.errorLine };
    }
    this.diskCache.entries = entries;
    const doc: ParseCacheDoc = { format: PARSE_CACHE_FORMAT, duckdb: this.diskCache.version, entries };
    try {
      this.ctx.project.writeFile(PARSE_CACHE_FILE, JSON.stringify(doc));
    } catch (e) {
      // A read-only project folder still works, only without the cache.
      this.ctx.log.debug('model parse cache not written', { error: errorMessage(e) });
    }
  }

  seedFiles(schemaOverride?: string): SeedFile[] {
    const dir = this.ctx.project.resolve(SEEDS_DIR);
    const schema = schemaOverride ?? DEFAULT_SEED_SCHEMA;
    const out: SeedFile[] = [];
    for (const { abs, stamp } of listFiles(this.ctx.project, SEEDS_DIR, '.csv', false)) {
      const hit = this.seedCache.get(abs);
      let base: SeedFile;
      if (hit && sameStamp(hit.stamp, stamp)) base = hit.file;
      else {
        const rel = this.ctx.project.relative(abs);
        const name = path.basename(abs).replace(/\.csv$/i, '');
        if (!SAFE_NAME.test(name)) {
          throw badRequest('invalid_seed_name', `${rel}: seed name '${name}' must be letters, digits and underscores, not starting with a digit`, { file: rel });
        }
        base = { name, schema: DEFAULT_SEED_SCHEMA, full_name: `${DEFAULT_SEED_SCHEMA}.${name}`, path: rel, absPath: abs, content_hash: sha256(fs.readFileSync(abs)) };
        this.seedCache.set(abs, { stamp, file: base });
      }
      out.push({ ...base, schema, full_name: `${schema}.${base.name}` });
    }
    return out;
  }
}

/** `DESCRIBE t` / `SHOW t` / `SUMMARIZE t` as a whole statement (DuckDB parses them as a SELECT * over a SHOW_REF). */
function isBareShow(node: SqlNode): boolean {
  const list = node.select_list ?? [];
  return list.length === 1 && list[0].class === 'STAR' && list[0].query_location > Number.MAX_SAFE_INTEGER / 2 && !node.where_clause;
}
