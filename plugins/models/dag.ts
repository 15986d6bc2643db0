/**
 * The model graph: resolves each model's references to models, seeds, declared sources or
 * existing relations, rejects duplicates, unknown references and cycles (naming the files), and
 * orders models topologically. Selectors follow dbt: `name`, `+name` (with its upstream),
 * `name+` (with its downstream), `+name+`.
 */
import { badRequest, conflict, type DagEdge, type DagNode, type ModelInfo, type SourceConfig } from '../../sdk/index.js';
import type { ModelFile, SeedFile } from './discovery.js';
import { relationKind } from './materializations.js';

export interface GraphModel {
  file: ModelFile;
  /** What the service answers (kind and query always filled). */
  info: ModelInfo & Required<Pick<ModelInfo, 'kind' | 'query'>>;
  /** Keys (lower-case full names) of upstream models. */
  upstreamModels: string[];
  /** Every upstream relation, as written in depends_on. */
  upstream: string[];
}

export interface ModelGraph {
  /** Topological order (upstream first; ties by name, so the order is stable). */
  models: GraphModel[];
  byKey: Map<string, GraphModel>;
  /** Keys of the direct downstream models of each model. */
  downstream: Map<string, string[]>;
  /** Position in `models`. */
  order: Map<string, number>;
}

export const keyOf = (name: string) => name.toLowerCase();

export interface GraphInputs {
  files: ModelFile[];
  seeds: SeedFile[];
  sources: SourceConfig[];
  /** Lower-case `schema.name` of every table and view in the database (asked only when needed). */
  existingRelations: () => Promise<Set<string>>;
}

export async function buildGraph(input: GraphInputs): Promise<ModelGraph> {
  const byKey = new Map<string, ModelFile>();
  const byName = new Map<string, ModelFile>();
  for (const f of input.files) {
    const clash = byKey.get(keyOf(f.full_name)) ?? byName.get(keyOf(f.name));
    if (clash) {
      throw conflict('duplicate_model', `Two models are named '${f.name}': ${clash.path} and ${f.path}. Model names must be unique across schemas.`, {
        model: f.name,
        files: [clash.path, f.path],
      });
    }
    byKey.set(keyOf(f.full_name), f);
    byName.set(keyOf(f.name), f);
  }
  const seedsByKey = new Map(input.seeds.map((s) => [keyOf(s.full_name), s]));
  const seedsByName = new Map(input.seeds.map((s) => [keyOf(s.name), s]));
  const sourceKeys = new Set(input.sources.flatMap((src) => (src.tables ?? []).map((t) => keyOf(`${src.schema}.${t.name}`))));

  const unknown: Array<{ file: string; reference: string; hint?: string }> = [];
  const pendingExternal: Array<{ file: ModelFile; name: string }> = [];
  const resolved = new Map<string, { upstream: string[]; upstreamModels: string[] }>();

  for (const f of input.files) {
    const upstream: string[] = [];
    const upstreamModels: string[] = [];
    const add = (name: string) => {
      if (upstream.some((u) => keyOf(u) === keyOf(name))) return;
      upstream.push(name);
      if (byKey.has(keyOf(name))) upstreamModels.push(keyOf(name));
    };
    if (f.declaredDependsOn) {
      for (const raw of f.declaredDependsOn) {
        if (raw.includes('.')) {
          add(resolveQualified(raw, byKey, seedsByKey));
          if (!byKey.has(keyOf(raw)) && !seedsByKey.has(keyOf(raw)) && !sourceKeys.has(keyOf(raw))) pendingExternal.push({ file: f, name: raw });
          continue;
        }
        const model = byName.get(keyOf(raw));
        const seed = seedsByName.get(keyOf(raw));
        if (model) add(model.full_name);
        else if (seed) add(seed.full_name);
        else unknown.push({ file: f.path, reference: raw, hint: '@depends_on names a model or seed by name, or any relation as schema.name' });
      }
    }
    // A native model's declaration adds to what ClickHouse's grammar found (native.ts); DuckDB SQL's replaces it.
    if (!f.declaredDependsOn || f.dialect) {
      for (const ref of f.refs) {
        const schema = ref.schema || 'main';
        const name = `${schema}.${ref.table}`;
        const k = keyOf(name);
        if (byKey.has(k)) add(byKey.get(k)!.full_name);
        else if (seedsByKey.has(k)) add(seedsByKey.get(k)!.full_name);
        else {
          add(name);
          if (!sourceKeys.has(k)) pendingExternal.push({ file: f, name });
        }
      }
    }
    resolved.set(keyOf(f.full_name), { upstream, upstreamModels });
  }

  if (pendingExternal.length) {
    const existing = await input.existingRelations();
    for (const p of pendingExternal) {
      if (existing.has(keyOf(p.name))) continue;
      const bare = p.name.split('.').pop()!;
      const model = byName.get(keyOf(bare));
      const seed = seedsByName.get(keyOf(bare));
      const hint = model ? `did you mean ${model.full_name}?` : seed ? `did you mean ${seed.full_name}?` : undefined;
      unknown.push({ file: p.file.path, reference: p.name, ...(hint ? { hint } : {}) });
    }
  }
  if (unknown.length) {
    const lines = unknown.map((u) => `${u.file}: '${u.reference}'${u.hint ? ` (${u.hint})` : ''}`);
    throw badRequest(
      'unknown_reference',
      `Unknown reference${unknown.length > 1 ? 's' : ''}: ${lines.join('; ')}. A reference must name a model, a seed, a source declared in project.yml, or an existing table.`,
      { references: unknown },
    );
  }

  const downstream = new Map<string, string[]>();
  for (const f of input.files) downstream.set(keyOf(f.full_name), []);
  for (const [key, r] of resolved) for (const up of r.upstreamModels) downstream.get(up)!.push(key);

  const order = topologicalOrder(input.files, resolved, downstream);
  const models: GraphModel[] = order.map((key) => {
    const file = byKey.get(key)!;
    const r = resolved.get(key)!;
    return {
      file,
      upstream: r.upstream,
      upstreamModels: r.upstreamModels,
      info: {
        name: file.name,
        schema: file.schema,
        full_name: file.full_name,
        materialized: file.materialized,
        kind: relationKind(file.materialized),
        depends_on: r.upstream,
        path: file.path,
        content_hash: file.content_hash,
        sql: file.sql,
        query: file.query,
        assertions: file.assertions,
        config: file.config,
        ...(file.referencesKnown ? {} : { referencesKnown: false }),
      },
    };
  });
  return {
    models,
    byKey: new Map(models.map((m) => [keyOf(m.info.full_name), m])),
    downstream,
    order: new Map(models.map((m, i) => [keyOf(m.info.full_name), i])),
  };
}

function resolveQualified(raw: string, models: Map<string, ModelFile>, seeds: Map<string, SeedFile>): string {
  return models.get(keyOf(raw))?.full_name ?? seeds.get(keyOf(raw))?.full_name ?? raw;
}

/** Kahn's algorithm; on a cycle, throws naming the models and files on it. */
function topologicalOrder(
  files: ModelFile[],
  resolved: Map<string, { upstreamModels: string[] }>,
  downstream: Map<string, string[]>,
): string[] {
  const indegree = new Map<string, number>();
  for (const f of files) indegree.set(keyOf(f.full_name), resolved.get(keyOf(f.full_name))!.upstreamModels.length);
  // A min-heap of ready keys: the smallest name goes first, so the order is stable (sorting the
  // ready list on every release was quadratic on 10,000 models).
  const ready = new MinHeap();
  for (const [k, n] of indegree) if (n === 0) ready.push(k);
  const out: string[] = [];
  while (ready.size) {
    const k = ready.pop();
    out.push(k);
    for (const d of downstream.get(k) ?? []) {
      const n = indegree.get(d)! - 1;
      indegree.set(d, n);
      if (n === 0) ready.push(d);
    }
  }
  if (out.length < files.length) {
    const cycle = findCycle(files, resolved, new Set(out));
    const byKey = new Map(files.map((f) => [keyOf(f.full_name), f]));
    const names = cycle.map((k) => byKey.get(k)!.full_name);
    const paths = [...new Set(cycle.map((k) => byKey.get(k)!.path))];
    throw badRequest('dependency_cycle', `Models depend on each other in a cycle: ${[...names, names[0]].join(' → ')} (files: ${paths.join(', ')})`, {
      cycle: names,
      files: paths,
    });
  }
  return out;
}

function findCycle(files: ModelFile[], resolved: Map<string, { upstreamModels: string[] }>, done: Set<string>): string[] {
  const state = new Map<string, 'visiting' | 'visited'>();
  const stack: string[] = [];
  const visit = (k: string): string[] | null => {
    state.set(k, 'visiting');
    stack.push(k);
    for (const up of resolved.get(k)!.upstreamModels) {
      if (done.has(up)) continue;
      if (state.get(up) === 'visiting') return stack.slice(stack.indexOf(up)).reverse();
      if (!state.has(up)) {
        const c = visit(up);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(k, 'visited');
    return null;
  };
  for (const f of files) {
    const k = keyOf(f.full_name);
    if (done.has(k) || state.has(k)) continue;
    const c = visit(k);
    if (c) return c;
  }
  return [];
}

/** A model by `schema.name` or bare name. */
export function findModel(graph: ModelGraph, name: string): GraphModel | undefined {
  const direct = graph.byKey.get(keyOf(name));
  if (direct) return direct;
  if (name.includes('.')) return undefined;
  return graph.models.find((m) => keyOf(m.info.name) === keyOf(name));
}

function closure(graph: ModelGraph, start: string, direction: 'up' | 'down'): Set<string> {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length) {
    const k = stack.pop()!;
    const next = direction === 'up' ? graph.byKey.get(k)!.upstreamModels : graph.downstream.get(k) ?? [];
    for (const n of next) if (!seen.has(n)) (seen.add(n), stack.push(n));
  }
  return seen;
}

export const upstreamOf = (graph: ModelGraph, key: string) => closure(graph, key, 'up');
export const downstreamOf = (graph: ModelGraph, key: string) => closure(graph, key, 'down');

/** Keys selected by dbt-style selectors; null or empty (or `all`) selects every model. */
export function selectModels(graph: ModelGraph, targets: string[] | null | undefined): Set<string> {
  if (!targets || targets.length === 0 || targets.some((t) => t === 'all' || t === '*')) return new Set(graph.byKey.keys());
  const out = new Set<string>();
  for (const raw of targets) {
    const t = raw.trim();
    const withUp = t.startsWith('+');
    const withDown = t.endsWith('+') && t.length > 1;
    const name = t.replace(/^\+/, '').replace(/\+$/, '');
    const model = findModel(graph, name);
    if (!model) throw badRequest('unknown_model', `No model named '${name}' (selector '${raw}')`, { target: raw });
    const key = keyOf(model.info.full_name);
    out.add(key);
    if (withUp) for (const k of upstreamOf(graph, key)) out.add(k);
    if (withDown) for (const k of downstreamOf(graph, key)) out.add(k);
  }
  return out;
}

const dags = new WeakMap<ModelGraph, { nodes: DagNode[]; edges: DagEdge[] }>();

/**
 * The models-only DAG: one node per model, edges upstream → downstream. Kept per graph (a graph
 * is kept until a file changes), so a repeated request does not rebuild 10,000 nodes; callers
 * read it and never change it.
 */
export function dagOf(graph: ModelGraph): { nodes: DagNode[]; edges: DagEdge[] } {
  const kept = dags.get(graph);
  if (kept) return kept;
  const nodes: DagNode[] = graph.models.map((m) => ({
    id: m.info.full_name,
    type: m.info.kind,
    materialized: m.info.materialized,
    label: m.info.name,
    schema: m.info.schema,
    path: m.info.path,
  }));
  const edges: DagEdge[] = [];
  for (const m of graph.models) for (const up of m.upstreamModels) edges.push({ source: graph.byKey.get(up)!.info.full_name, target: m.info.full_name });
  const dag = { nodes, edges };
  dags.set(graph, dag);
  return dag;
}

/** A binary min-heap of strings (code-unit order, as Array.prototype.sort). */
class MinHeap {
  private readonly items: string[] = [];
  get size(): number {
    return this.items.length;
  }
  push(value: string): void {
    const a = this.items;
    a.push(value);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent] <= a[i]) break;
      [a[parent], a[i]] = [a[i], a[parent]];
      i = parent;
    }
  }
  pop(): string {
    const a = this.items;
    const top = a[0];
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l] < a[m]) m = l;
        if (r < a.length && a[r] < a[m]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}
