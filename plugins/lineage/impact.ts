/**
 * Impact analysis: what a change to a model (or one of its columns) reaches downstream.
 * Models are found through dependency edges; columns through column lineage, so a column
 * no downstream model reads affects no downstream column even though the models depend
 * on each other.
 */
import type { ModelLineage } from '../../sdk/index.js';
import { STAR } from './columns.js';

export interface ImpactRecord {
  model: string;
  column?: string;
  /** Every model downstream of `model`, transitively, nearest first. */
  downstream_models: string[];
  affected_columns: Array<{ model: string; column: string }>;
  /** `model` and each downstream model → the models that depend on it directly. */
  impact_chain: Record<string, string[]>;
}

const key = (s: string) => s.toLowerCase();

/**
 * Impact of `model` (a full name present in `lineages`); with `column`, only that column.
 * A `*` output (a star over an unknown relation) passes columns through by name.
 */
export function impactOf(model: string, column: string | undefined, lineages: ModelLineage[]): ImpactRecord {
  const byKey = new Map(lineages.map((l) => [key(l.model), l]));
  const children = new Map<string, string[]>();
  for (const l of lineages) {
    for (const d of l.depends_on) {
      const list = children.get(key(d)) ?? [];
      if (!list.includes(l.model)) list.push(l.model);
      children.set(key(d), list);
    }
  }

  const downstream: string[] = [];
  const seen = new Set([key(model)]);
  for (let queue = [model]; queue.length; ) {
    const next: string[] = [];
    for (const m of queue) {
      for (const child of children.get(key(m)) ?? []) {
        if (seen.has(key(child))) continue;
        seen.add(key(child));
        downstream.push(child);
        next.push(child);
      }
    }
    queue = next;
  }

  const impact_chain: Record<string, string[]> = {};
  for (const m of [model, ...downstream]) impact_chain[m] = [...(children.get(key(m)) ?? [])];

  // Affected columns per model (lower-case names); STAR in a set means "every column".
  const tracked = new Map<string, Set<string>>([[key(model), new Set([column === undefined ? STAR : key(column)])]]);
  const isTracked = (table: string, col: string): boolean => {
    const set = tracked.get(key(table));
    if (!set) return false;
    return set.has(STAR) || set.has(key(col)) || (col === STAR && set.size > 0);
  };
  const affected: Array<{ model: string; column: string }> = [];
  const mark = (m: string, col: string) => {
    const set = tracked.get(key(m)) ?? new Set<string>();
    if (set.has(key(col))) return;
    set.add(key(col));
    tracked.set(key(m), set);
    affected.push({ model: m, column: col });
  };

  for (const m of downstreamInDependencyOrder(downstream, byKey)) {
    const lineage = byKey.get(key(m));
    if (!lineage) continue;
    for (const [col, sources] of Object.entries(lineage.columns)) {
      if (col === STAR) {
        // Unknown columns flow through unchanged: the tracked names reappear here.
        for (const s of sources) {
          if (s.source_column !== STAR) continue;
          for (const name of tracked.get(key(s.source_table)) ?? []) mark(lineage.model, name === STAR ? STAR : originalName(byKey, s.source_table, name, column));
        }
      } else if (sources.some((s) => isTracked(s.source_table, s.source_column))) {
        mark(lineage.model, col);
      }
    }
  }

  return {
    model,
    ...(column !== undefined ? { column } : {}),
    downstream_models: downstream,
    affected_columns: affected,
    impact_chain,
  };
}

/** The spelling of a tracked column as its model (or the queried column) writes it. */
function originalName(byKey: Map<string, ModelLineage>, table: string, lowerName: string, queried: string | undefined): string {
  const cols = Object.keys(byKey.get(key(table))?.columns ?? {});
  return cols.find((c) => key(c) === lowerName) ?? (queried && key(queried) === lowerName ? queried : lowerName);
}

function downstreamInDependencyOrder(models: string[], byKey: Map<string, ModelLineage>): string[] {
  const wanted = new Set(models.map(key));
  const done = new Set<string>();
  const out: string[] = [];
  const visit = (m: string, depth: number) => {
    if (done.has(key(m)) || depth > wanted.size) return;
    for (const d of byKey.get(key(m))?.depends_on ?? []) if (wanted.has(key(d))) visit(byKey.get(key(d))?.model ?? d, depth + 1);
    if (done.has(key(m))) return;
    done.add(key(m));
    out.push(m);
  };
  for (const m of models) visit(m, 0);
  return out;
}
