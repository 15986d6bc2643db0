/**
 * Derived policies: masking that follows the data through column lineage (issue 19,
 * docs/security.md "Masking through lineage"). From the lineage service's column lineage of
 * every model, a column whose value comes from a masked column is masked for the same roles:
 *
 * - a pass-through, rename or cast of masked columns that share one method and config (one column,
 *   or the branches of a UNION) gets that method and config;
 * - a column computed from masked input gets `redact` (text) or `null` (other types);
 * - a plain `count(col)` / `count(*)` stays unmasked (it reveals no value);
 * - an explicit policy on the column wins (`method: none` declassifies it, and what is computed
 *   only from it downstream is unmasked too).
 *
 * Derivation runs when the catalog or the models change (an event, or a new catalog epoch), never
 * per query: the enforcer asks `current()` and gets the cached list unless something changed.
 */
import type { LineageService, Logger, ModelLineage } from '../../sdk/index.js';
import type { MaskingPolicy, PolicyStore } from './policies.js';
import { isWholeRelation, masksRead, untracedReads, WHOLE_RELATION } from './not-analysed.js';
import type { RelationCatalog } from './relations.js';

export const DECLASSIFY_METHOD = 'none';

/** A policy derived from lineage; enforced exactly like an explicit one. */
export interface DerivedPolicy extends MaskingPolicy {
  derived: true;
  /** `schema.table.column` of the explicit policies' columns this value comes from. */
  sources: string[];
  /** How the column relates to its masked input. */
  kind: 'pass' | 'computed';
}

const TEXT_TYPE = /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR|UUID|JSON)(\(\d+\))?$/i;
const lc = (s: string) => s.toLowerCase();
const MAX_PASSES = 64;

/** Roles a combination of masked inputs still exempts: only those every input exempts. */
function commonExempt(lists: string[][]): string[] {
  if (!lists.length) return [];
  return lists[0]!.filter((r) => lists.every((l) => l.includes(r)));
}

/**
 * Derives policies from explicit ones and model lineage. `typeOf` gives a model column's DuckDB
 * type when the model is built (the default for computed columns depends on it); `columnsOf` a
 * relation's columns when the catalog has it (for models lineage does not trace, not-analysed.ts).
 */
export function derivePolicies(
  explicit: readonly MaskingPolicy[],
  lineage: ModelLineage[],
  typeOf: (relation: string, column: string) => string | undefined,
  columnsOf: (relation: string) => string[] | undefined = () => undefined,
): DerivedPolicy[] {
  const explicitAt = new Map<string, MaskingPolicy>();
  for (const p of explicit) explicitAt.set(lc(`${p.schema_name}.${p.table_name}.${p.column_name}`), p);
  // Policies match namesake columns everywhere (docs/decisions.md "Masking policy" rule 4): a source column of such a name is masked too.
  const byName = new Map<string, MaskingPolicy>();
  for (const p of explicit) if (p.method !== DECLASSIFY_METHOD && !byName.has(lc(p.column_name))) byName.set(lc(p.column_name), p);

  const derived = new Map<string, DerivedPolicy>();
  /** The masking that reaches a source column: its policy and the explicit columns behind it. */
  const maskedAt = (relation: string, column: string): { policy: MaskingPolicy; roots: string[] } | null => {
    const k = lc(`${relation}.${column}`);
    const own = explicitAt.get(k);
    if (own) return own.method === DECLASSIFY_METHOD ? null : { policy: own, roots: [`${own.schema_name}.${own.table_name}.${own.column_name}`] };
    const d = derived.get(k) ?? derived.get(lc(`${relation}.${WHOLE_RELATION}`));
    if (d) return { policy: d, roots: d.sources };
    const named = byName.get(lc(column));
    return named ? { policy: named, roots: [`${named.schema_name}.${named.table_name}.${named.column_name}`] } : null;
  };

  // What a model reads whose columns lineage does not trace: the policies on a relation, and its columns when known.
  const traced = new Map(lineage.filter((m) => !m.columns[WHOLE_RELATION]).map((m) => [lc(m.model), Object.keys(m.columns)]));
  const policiesOn = (relation: string): MaskingPolicy[] => {
    const on = (p: MaskingPolicy) => p.method !== DECLASSIFY_METHOD && lc(`${p.schema_name}.${p.table_name}`) === lc(relation);
    return [...explicit.filter(on), ...[...derived.values()].filter(on)];
  };
  const readColumns = (relation: string) => traced.get(lc(relation)) ?? columnsOf(relation);

  // Models arrive in the models service's order; repeat until nothing changes so upstream-first order does not matter.
  for (let pass = 0, changed = true; changed && pass < MAX_PASSES; pass++) {
    changed = false;
    for (const model of lineage) {
      const dot = model.model.lastIndexOf('.');
      const schema = model.model.slice(0, dot);
      const table = model.model.slice(dot + 1);
      const untraced = untracedReads(model, (r) => derived.has(lc(`${r}.${WHOLE_RELATION}`)));
      if (untraced) {
        const hits = masksRead(untraced, policiesOn, readColumns, byName);
        if (hits.length) {
          const next: DerivedPolicy = {
            id: `derived:${model.model}.${WHOLE_RELATION}`,
            schema_name: schema,
            table_name: table,
            column_name: WHOLE_RELATION,
            method: 'redact',
            method_config: {},
            condition_column: null,
            condition_value: null,
            exempted_roles: commonExempt(hits.map((h) => h.exempted_roles)),
            created_at: '',
            derived: true,
            sources: [...new Set(hits.flatMap((h) => ('derived' in h ? (h as DerivedPolicy).sources : [`${h.schema_name}.${h.table_name}.${h.column_name}`])))].sort(),
            kind: 'computed',
          };
          const k = lc(`${model.model}.${WHOLE_RELATION}`);
          const prior = derived.get(k);
          if (!prior || JSON.stringify(prior) !== JSON.stringify(next)) {
            derived.set(k, next);
            changed = true;
          }
        }
        if (model.method === 'not_analysed') continue;
      }
      for (const [column, sources] of Object.entries(model.columns)) {
        if (column === '*') continue;
        const k = lc(`${model.model}.${column}`);
        // An explicit policy on the column says what it is (including `none`).
        if (explicitAt.has(k)) continue;
        const kind = model.kinds?.[column] ?? 'computed';
        if (kind === 'count') continue;
        const hits = sources.map((s) => maskedAt(s.source_table, s.source_column)).filter((h): h is NonNullable<typeof h> => h !== null);
        if (!hits.length) continue;
        const roots = [...new Set(hits.flatMap((h) => h.roots))].sort();
        const exempt = commonExempt(hits.map((h) => h.policy.exempted_roles));
        let method: string;
        let config: Record<string, unknown>;
        let finalKind: DerivedPolicy['kind'];
        // The same value as its sources (a pass-through of one column, or of the branches of a
        // UNION that are all masked with one method): their method, so the mask reads the same.
        const sameMethod = hits.every((h) => h.policy.method === hits[0]!.policy.method && JSON.stringify(h.policy.method_config ?? {}) === JSON.stringify(hits[0]!.policy.method_config ?? {}));
        // A column of a relation masked as a whole has no method of its own to pass on: computed.
        if (kind === 'pass' && hits.length === sources.length && sameMethod && !hits.some((h) => isWholeRelation(h.policy))) {
          method = hits[0]!.policy.method;
          config = { ...hits[0]!.policy.method_config };
          finalKind = 'pass';
        } else {
          const type = typeOf(model.model, column);
          method = type === undefined || TEXT_TYPE.test(type) ? 'redact' : 'null';
          config = {};
          finalKind = 'computed';
        }
        const next: DerivedPolicy = {
          id: `derived:${model.model}.${column}`,
          schema_name: schema,
          table_name: table,
          column_name: column,
          method,
          method_config: config,
          // A condition column of the source may not exist downstream: derived masks apply to every row.
          condition_column: null,
          condition_value: null,
          exempted_roles: exempt,
          created_at: '',
          derived: true,
          sources: roots,
          kind: finalKind,
        };
        const prior = derived.get(k);
        if (!prior || JSON.stringify(prior) !== JSON.stringify(next)) {
          derived.set(k, next);
          changed = true;
        }
      }
    }
  }
  return [...derived.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/** Keeps the derived policies current for the enforcer (recomputed on change, never per query). */
export class DerivedPolicies {
  private list: DerivedPolicy[] = [];
  private dirty = true;
  private computedAt: { storeVersion: number; epoch: number } | null = null;
  private running: Promise<void> | null = null;
  private versionCounter = 0;
  /** How many times policies were derived (the tests check queries alone do not derive again). */
  readonly stats = { derivations: 0 };

  constructor(
    /** The lineage service, loaded on the first call when the command has not loaded it (activation on demand). */
    private readonly lineage: () => Promise<LineageService | undefined>,
    private readonly store: PolicyStore,
    private readonly relations: RelationCatalog,
    private readonly log: Logger,
  ) {}

  /** Changes whenever the derived set changes (part of the rewrite cache key). */
  get version(): number {
    return this.versionCounter;
  }

  /** Something changed (a model build, a catalog change): derive again before the next query. */
  invalidate(): void {
    this.dirty = true;
  }

  /** The derived policies, derived again first when the models, the catalog or the policies changed. */
  async current(): Promise<readonly DerivedPolicy[]> {
    // Nothing masked, nothing to follow: no catalog read, no lineage (the common case costs nothing).
    if (!this.store.masksAny()) {
      this.publish([]);
      this.dirty = true;
      return this.list;
    }
    const snap = await this.relations.snapshot();
    const stale = this.dirty || !this.computedAt || this.computedAt.storeVersion !== this.store.version || this.computedAt.epoch !== snap.epoch;
    if (stale) {
      this.running ??= this.recompute().finally(() => {
        this.running = null;
      });
      await this.running;
    }
    return this.list;
  }

  private async recompute(): Promise<void> {
    // First, so that what loading lineage changes (its plugins' migrations) is behind the snapshot below;
    // a failure to load leaves the set dirty and fails the query (closed).
    const service = await this.lineage();
    this.dirty = false;
    this.stats.derivations++;
    const snap = await this.relations.snapshot();
    const storeVersion = this.store.version;
    if (!service) {
      this.publish([]);
      this.computedAt = { storeVersion, epoch: snap.epoch };
      return;
    }
    let lineage: ModelLineage[];
    try {
      lineage = await service.all();
    } catch (e) {
      // Fail closed on the previous set and try again on the next query.
      this.dirty = true;
      this.log.error(`masking: could not read column lineage to derive policies (${(e as Error).message}); keeping the previous derived policies`);
      return;
    }
    const typeOf = (relation: string, column: string) => {
      const dot = relation.lastIndexOf('.');
      const rel = snap.relations.get(`${snap.currentDatabase}\u0000${relation.slice(0, dot)}\u0000${relation.slice(dot + 1)}`.toLowerCase());
      return rel?.byName.get(column.toLowerCase())?.type;
    };
    const columnsOf = (relation: string) => {
      const dot = relation.lastIndexOf('.');
      return snap.relations.get(`${snap.currentDatabase}\u0000${relation.slice(0, dot)}\u0000${relation.slice(dot + 1)}`.toLowerCase())?.columns.map((c) => c.name);
    };
    const next = derivePolicies(this.store.all(), lineage, typeOf, columnsOf);
    // A model edited but not rebuilt: its built relation still holds the columns the old lineage masked. Keep those masks until it is rebuilt.
    const fresh = new Set(next.map((p) => p.id.toLowerCase()));
    const explicit = new Set(this.store.all().map((p) => lc(`${p.schema_name}.${p.table_name}.${p.column_name}`)));
    for (const old of this.list) {
      if (fresh.has(old.id.toLowerCase()) || explicit.has(lc(`${old.schema_name}.${old.table_name}.${old.column_name}`))) continue;
      const model = lineage.find((l) => lc(l.model) === lc(`${old.schema_name}.${old.table_name}`));
      const stillListed = model && Object.keys(model.columns).some((c) => lc(c) === lc(old.column_name));
      if (!stillListed && typeOf(`${old.schema_name}.${old.table_name}`, old.column_name) !== undefined) next.push(old);
    }
    this.publish(next);
    this.computedAt = { storeVersion, epoch: snap.epoch };
  }

  private publish(next: DerivedPolicy[]): void {
    if (JSON.stringify(next) !== JSON.stringify(this.list)) {
      this.list = next;
      this.versionCounter++;
    }
  }
}
