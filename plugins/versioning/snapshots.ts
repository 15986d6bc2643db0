/**
 * Snapshots: metadata only, no table data. A snapshot records the SHA-256 of every file under
 * `transform/`, `ingest/` and `export/` plus `project.yml`, each user table's row count and
 * column-schema hash, and one combined hash of both. `dp diff --snapshot <name>` compares the
 * project now with it. Snapshots live in `_service.snapshots`.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { badRequest, conflict, notFound, walkProjectFiles, type PluginContext } from '../../sdk/index.js';
import type { SnapshotDiff, SnapshotSummary } from './api-types.js';
import { columnsHash, rowCount, userTables } from './catalog.js';
import { stamp } from './paths.js';

export const SNAPSHOT_MIGRATIONS = [
  {
    id: 'versioning-002',
    sql: `CREATE TABLE IF NOT EXISTS _service.snapshots (
     name VARCHAR PRIMARY KEY,
     created_at VARCHAR NOT NULL,
     project_hash VARCHAR NOT NULL,
     files JSON NOT NULL,
     tables JSON NOT NULL
   )`,
  },
];

const TRACKED_FOLDERS = ['transform', 'ingest', 'export'];
const SNAPSHOT_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

export interface TableSignature {
  rows: number;
  schema_hash: string;
}

export interface ProjectState {
  /** Project-relative path → SHA-256 of the content. */
  files: Record<string, string>;
  /** `schema.table` → signature. */
  tables: Record<string, TableSignature>;
  project_hash: string;
}

const sha256 = (data: string | Buffer) => crypto.createHash('sha256').update(data).digest('hex');

/** The state a snapshot records, computed now. */
export async function projectState(ctx: PluginContext): Promise<ProjectState> {
  const files: Record<string, string> = {};
  for (const dir of TRACKED_FOLDERS) for (const f of walkProjectFiles(ctx.project, dir)) files[f.path] = sha256(fs.readFileSync(f.abs));
  const yml = ctx.project.resolve('project.yml');
  if (fs.existsSync(yml)) files['project.yml'] = sha256(fs.readFileSync(yml));
  const tables: Record<string, TableSignature> = {};
  for (const t of await userTables(ctx.db)) tables[t.table] = { rows: await rowCount(ctx.db, t), schema_hash: columnsHash(t.columns) };
  const sorted = (o: Record<string, unknown>) => Object.keys(o).sort().map((k) => [k, o[k]]);
  return { files, tables, project_hash: sha256(JSON.stringify({ files: sorted(files), tables: sorted(tables) })) };
}

function checkName(name: string): void {
  if (!SNAPSHOT_NAME.test(name) || name === '.' || name === '..') {
    throw badRequest('invalid_snapshot_name', 'A snapshot name has 1 to 100 letters, digits, _ . or -', { name: name.slice(0, 100) });
  }
}

interface SnapshotRow {
  name: string;
  created_at: string;
  project_hash: string;
  files: string | Record<string, string>;
  tables: string | Record<string, TableSignature>;
}

const parsed = <T>(v: string | T): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);

export class SnapshotStore {
  constructor(private readonly ctx: PluginContext) {}

  async create(name?: string | null): Promise<SnapshotSummary> {
    const at = new Date();
    const chosen = name ?? `snapshot-${stamp(at)}`;
    checkName(chosen);
    if (await this.ctx.db.value('SELECT 1 FROM _service.snapshots WHERE name = $1', [chosen])) {
      throw conflict('snapshot_exists', `A snapshot named '${chosen}' already exists`, { name: chosen });
    }
    const state = await projectState(this.ctx);
    await this.ctx.db.run('INSERT INTO _service.snapshots (name, created_at, project_hash, files, tables) VALUES ($1, $2, $3, $4::JSON, $5::JSON)', [
      chosen,
      at.toISOString(),
      state.project_hash,
      JSON.stringify(state.files),
      JSON.stringify(state.tables),
    ]);
    return { name: chosen, created_at: at.toISOString(), project_hash: state.project_hash, file_count: Object.keys(state.files).length, table_count: Object.keys(state.tables).length };
  }

  async list(): Promise<SnapshotSummary[]> {
    const rows = await this.ctx.db.all<SnapshotRow>('SELECT * FROM _service.snapshots ORDER BY created_at DESC, name');
    return rows.map((r) => ({
      name: r.name,
      created_at: r.created_at,
      project_hash: r.project_hash,
      file_count: Object.keys(parsed(r.files)).length,
      table_count: Object.keys(parsed(r.tables)).length,
    }));
  }

  private async row(name: string): Promise<SnapshotRow> {
    checkName(name);
    const [r] = await this.ctx.db.all<SnapshotRow>('SELECT * FROM _service.snapshots WHERE name = $1', [name]);
    if (!r) throw notFound('snapshot_not_found', `No snapshot '${name}'`, { name });
    return r;
  }

  async delete(name: string): Promise<{ deleted: string }> {
    await this.row(name);
    await this.ctx.db.run('DELETE FROM _service.snapshots WHERE name = $1', [name]);
    return { deleted: name };
  }

  /** File changes (added, modified, removed) and table changes with before and after row counts. */
  async diff(name: string): Promise<SnapshotDiff> {
    const r = await this.row(name);
    const beforeFiles = parsed(r.files);
    const beforeTables = parsed(r.tables);
    const now = await projectState(this.ctx);
    const files = { added: [] as string[], modified: [] as string[], removed: [] as string[] };
    for (const [p, h] of Object.entries(now.files)) {
      if (!(p in beforeFiles)) files.added.push(p);
      else if (beforeFiles[p] !== h) files.modified.push(p);
    }
    for (const p of Object.keys(beforeFiles)) if (!(p in now.files)) files.removed.push(p);
    const tables: SnapshotDiff['tables'] = [];
    for (const name of [...new Set([...Object.keys(beforeTables), ...Object.keys(now.tables)])].sort()) {
      const b = beforeTables[name];
      const a = now.tables[name];
      if (!b) tables.push({ table: name, status: 'added', rows_before: null, rows_after: a.rows, schema_changed: false });
      else if (!a) tables.push({ table: name, status: 'removed', rows_before: b.rows, rows_after: null, schema_changed: false });
      else if (a.rows !== b.rows || a.schema_hash !== b.schema_hash) {
        tables.push({ table: name, status: 'modified', rows_before: b.rows, rows_after: a.rows, schema_changed: a.schema_hash !== b.schema_hash });
      }
    }
    for (const list of Object.values(files)) list.sort();
    return {
      snapshot: r.name,
      created_at: r.created_at,
      changed: now.project_hash !== r.project_hash,
      project_hash_before: r.project_hash,
      project_hash_now: now.project_hash,
      files,
      tables,
    };
  }
}
