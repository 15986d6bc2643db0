/**
 * Lineage of every model, computed in dependency order so a model's `SELECT *` over an
 * upstream model expands to that model's output columns, and cached per model by its
 * content hash plus the column lists of the relations it reads (the upstream signature):
 * an unchanged project answers from memory, and a change upstream recomputes only what it
 * can affect.
 */
import {
  errorMessage,
  notFound,
  type Logger,
  type DatabasePort,
  nativeDialect,
  type ModelInfo,
  type ModelLineage,
  type ModelsService,
  type ParsedSql,
} from '../../sdk/index.js';
import { columnLineage, reconcileWithRelation, UnparseableSql, type ColumnLineageResult, type LineageEnv } from './columns.js';
import type { LineageDiskCache, StoredLineage } from './disk-cache.js';
import { notAnalysed } from './not-analysed.js';
import { regexLineage } from './regex-fallback.js';

/** What is kept per model; `signature`: the column list (joined) of every relation the SQL read when it was computed, '' for unknown. */
type CacheEntry = StoredLineage;

/** Texts per parse query when a whole project is analysed (see prefetch). */
const PARSE_BATCH = 1000;

const key = (name: string) => name.toLowerCase();

export class LineageEngine {
  private readonly cache = new Map<string, CacheEntry>();
  /** Set once the entries of the disk cache (if any) are in `cache`. */
  private loaded: Promise<void> | null = null;

  constructor(
    private readonly db: DatabasePort,
    private readonly models: () => ModelsService,
    private readonly log?: Logger,
    /** Keeps the entries across processes (.dp/lineage-cache.json); none in unit tests. */
    private readonly disk?: LineageDiskCache,
  ) {}

  /** Lineage of every model, in the models service's order. */
  async all(): Promise<ModelLineage[]> {
    const models = await this.models().list();
    const results = await this.compute(models);
    // Models that are gone leave the cache (and so the file on disk).
    if (this.cache.size > models.length) for (const name of [...this.cache.keys()]) if (!results.has(name)) this.cache.delete(name);
    return models.map((m) => results.get(key(m.full_name))!);
  }

  /** Lineage of one model (by `schema.name` or bare name); 404 when unknown. */
  async one(name: string): Promise<ModelLineage> {
    const model = await this.find(name);
    const models = await this.models().list();
    const results = await this.compute(upstreamClosure(model, models));
    return results.get(key(model.full_name))!;
  }

  async find(name: string): Promise<ModelInfo> {
    const model = await this.models().get(name);
    if (!model) throw notFound('model_not_found', `No model named '${name}'`, { model: name });
    return model;
  }

  /** Column names of every relation in the live database, by lower-case `schema.name`. */
  private async liveColumns(): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const c of await this.db.catalog.allColumns()) {
      const k = key(`${c.schema}.${c.table}`);
      const list = out.get(k);
      if (list) list.push(c.name);
      else out.set(k, [c.name]);
    }
    return out;
  }

  private async compute(wanted: ModelInfo[]): Promise<Map<string, ModelLineage>> {
    if (this.disk) {
      this.loaded ??= this.disk.load().then(
        (stored) => {
          for (const [name, entry] of stored) if (!this.cache.has(name)) this.cache.set(name, entry);
        },
        (e) => this.log?.debug('lineage cache not read', { error: errorMessage(e) }),
      );
      await this.loaded;
    }
    let computed = 0;
    const live = await this.liveColumns();
    const order = topologicalOrder(wanted);
    const outputs = new Map<string, ColumnLineageResult>();
    const results = new Map<string, ModelLineage>();

    // A model's own output wins over the live relation: it is what the next build produces.
    const relationColumns = (relation: string): string[] | undefined => {
      const k = key(relation);
      const fromModel = outputs.get(k);
      return fromModel?.complete ? fromModel.order : live.get(k);
    };

    // Upstream columns are only known inside the loop; the prefetch goes by content hash.
    const stale = order.filter((m) => !nativeDialect(m.config) && this.cache.get(key(m.full_name))?.contentHash !== m.content_hash);
    const prefetched = this.prefetch(stale.map((m) => m.query ?? m.sql));
    const env: LineageEnv = {
      parse: async (sql) => (await prefetched(sql)) ?? this.db.parse(sql),
      relationColumns,
      deparse: (tree) => this.db.deparse(tree),
      describe: async (sql) => (await this.db.all<{ column_name: string }>(`DESCRIBE ${sql}`)).map((r) => r.column_name),
    };

    for (const model of order) {
      if (nativeDialect(model.config)) {
        // Written for a target, not in DuckDB SQL: said so, never guessed (not-analysed.ts).
        const { result, lineage } = notAnalysed(model, live.get(key(model.full_name)));
        outputs.set(key(model.full_name), result);
        results.set(key(model.full_name), lineage);
        continue;
      }
      let entry = this.cache.get(key(model.full_name));
      if (!entry || !this.fresh(model, relationColumns)) {
        let result: ColumnLineageResult;
        let method: 'parser' | 'regex' = 'parser';
        try {
          result = await columnLineage(model.query ?? model.sql, model.depends_on, env);
        } catch (e) {
          // One model's tree this analyser cannot follow must not fail the whole project's lineage.
          if (!(e instanceof UnparseableSql)) this.log?.warn('lineage: parse-tree analysis failed, using the regex fallback', { model: model.full_name, error: errorMessage(e) });
          result = regexLineage(model.sql, model.depends_on);
          method = 'regex';
        }
        entry = {
          contentHash: model.content_hash,
          dependsOn: model.depends_on.join(','),
          signature: new Map(result.relations.map((r) => [key(r), (relationColumns(r) ?? []).join('\u0000')])),
          result,
          method,
        };
        this.cache.set(key(model.full_name), entry);
        computed++;
      }
      // Outputs the SQL alone cannot name (PIVOT values, a star over an unknown relation) take the built relation's columns.
      const final = reconcileWithRelation(entry.result, live.get(key(model.full_name)));
      outputs.set(key(model.full_name), final);
      const columns: ModelLineage['columns'] = {};
      const kinds: NonNullable<ModelLineage['kinds']> = {};
      for (const name of final.order) {
        columns[name] = final.columns[name]!.map((s) => ({ ...s }));
        kinds[name] = final.kinds[name] ?? 'computed';
      }
      results.set(key(model.full_name), { model: model.full_name, columns, kinds, depends_on: [...model.depends_on], method: entry.method });
    }
    if (computed) this.disk?.save(() => this.cache);
    return results;
  }

  /** True when the cached lineage of a model still holds for its SQL and its upstream columns. */
  private fresh(model: ModelInfo, relationColumns: (r: string) => string[] | undefined): boolean {
    const entry = this.cache.get(key(model.full_name));
    if (!entry || entry.contentHash !== model.content_hash || entry.dependsOn !== model.depends_on.join(',')) return false;
    for (const [relation, signature] of entry.signature) {
      if ((relationColumns(relation) ?? []).join('\u0000') !== signature) return false;
    }
    return true;
  }

  /**
   * The parses of texts the loop will ask for in this order, in batches of one DuckDB query each
   * (parseMany): the next batch is parsed while the loop analyses this one, and a batch is
   * dropped once the loop moved past it, so the trees of a whole project are never all in
   * memory. Answers undefined for a text it does not hold (any more).
   */
  private prefetch(sqls: string[]): (sql: string) => Promise<ParsedSql | undefined> {
    const batchOf = new Map<string, number>();
    const batches: Array<string[]> = [];
    for (const sql of sqls) {
      if (batchOf.has(sql)) continue;
      if (!batches.length || batches[batches.length - 1]!.length >= PARSE_BATCH) batches.push([]);
      batchOf.set(sql, batches.length - 1);
      batches[batches.length - 1]!.push(sql);
    }
    const parsed: Array<Promise<Map<string, ParsedSql>> | null | undefined> = [];
    const start = (b: number) => {
      if (b >= batches.length || parsed[b] !== undefined) return;
      const texts = batches[b]!;
      parsed[b] = this.db.parseMany(texts).then((list) => new Map(texts.map((t, i) => [t, list[i]!])));
      // A failed batch is parsed text by text by the caller instead.
      parsed[b]!.catch(() => undefined);
    };
    return async (sql) => {
      const b = batchOf.get(sql);
      if (b === undefined || parsed[b] === null) return undefined;
      start(b);
      start(b + 1);
      for (let done = 0; done < b; done++) parsed[done] = null;
      return (await parsed[b]!.catch(() => undefined))?.get(sql);
    };
  }
}

/** The model and everything upstream of it (models only). */
function upstreamClosure(model: ModelInfo, models: ModelInfo[]): ModelInfo[] {
  const byName = new Map(models.map((m) => [key(m.full_name), m]));
  const seen = new Map<string, ModelInfo>();
  const stack = [model];
  while (stack.length) {
    const m = stack.pop()!;
    if (seen.has(key(m.full_name))) continue;
    seen.set(key(m.full_name), m);
    for (const d of m.depends_on) {
      const up = byName.get(key(d));
      if (up) stack.push(up);
    }
  }
  return [...seen.values()];
}

/** Upstream before downstream; models in a cycle (the models service rejects those) keep list order. */
export function topologicalOrder(models: ModelInfo[]): ModelInfo[] {
  const byName = new Map(models.map((m) => [key(m.full_name), m]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const out: ModelInfo[] = [];
  const visit = (m: ModelInfo) => {
    const k = key(m.full_name);
    if (done.has(k) || visiting.has(k)) return;
    visiting.add(k);
    for (const d of m.depends_on) {
      const up = byName.get(key(d));
      if (up) visit(up);
    }
    visiting.delete(k);
    done.add(k);
    out.push(m);
  };
  for (const m of models) visit(m);
  return out;
}
