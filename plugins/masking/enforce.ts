/**
 * Enforcement on the kernel's beforeQuery hook: decides which policies bind the caller, plans
 * the masks of every table scan from the live catalog, rewrites the SQL (cached per SQL text,
 * caller class, table, policy version and catalog epoch), refuses masked columns in
 * predicates, and falls back to masking result columns after execution when the rewrite
 * cannot be done.
 *
 * Cost per new SQL text: the parse is the kernel's (ctx.db.parse, cached per text and already
 * done by the read-only validation of the SQL as sent), the rewrite is JavaScript, and the new
 * text is spliced from the original (splice.ts) rather than deparsed; the kernel then parses
 * the new text to validate it, and the check registered on ctx.finalChecks confirms the masks
 * on that same parse.
 *
 * The parts live beside it: which columns a caller gets masked (mask-plan.ts), refusals before
 * any rewrite (refusals.ts), masking at the result (result-masking.ts), the rewrites (rewrite.ts,
 * late.ts, splice.ts) and their final checks (final-checks.ts).
 */
import {
  type Caller,
  DpError,
  errorMessage,
  forbidden,
  hasPermission,
  isDpError,
  type LineageService,
  type Logger,
  type ParsedSql,
  type PluginContext,
  type QueryContext,
  readTreeJson,
  type SerializedSql,
} from '../../sdk/index.js';
import type { MethodCatalog } from './catalog.js';
import { postExecutionMask } from './fallback.js';
import { refuseUntracedInFallback } from './not-analysed.js';
import { KEY_SCHEMA, KeySchemaGuard } from './keys.js';
import type { MaskingPolicy, PolicyStore } from './policies.js';
import { type CatalogSnapshot, RelationCatalog } from './relations.js';
import {
  type ColumnMask,
  findMaskedPredicate,
  needsRequalify,
  planScans,
  rewriteTree,
  type StarUse,
  wrapperSql,
} from './rewrite.js';
import { planLate, spliceLate } from './late.js';
import { planResultMasking, ResultMasker, resultPlanMismatch } from './result-masking.js';
import { spliceRewrite } from './splice.js';
import { marksByName, planResultMarks, type ResultMarks, resolveMarks } from './result-columns.js';
import { DECLASSIFY_METHOD, DerivedPolicies } from './derived.js';
import { MaskPlanner } from './mask-plan.js';
import { CACHE_MAX, FinalChecks, type Template } from './final-checks.js';
import { macroReadingMasks, starRefusal, statisticsCall } from './refusals.js';

interface CachedRewrite {
  sql: string;
  /** Set when the query is refused (cached too: the same query is refused the same way). */
  refusal?: { column: string; clause: string };
  /** A statistics function in a query that reads masked columns. */
  statistics?: string;
  hidden?: string;
  /** A called user macro whose body reads a table with masked columns. */
  macro?: { macro: string; table: string };
  /** For a rewrite: checks DuckDB's parse of `sql` (a ctx.finalChecks entry). */
  verify?: (tree: SerializedSql) => void;
  /** Policies of a table the catalog snapshot shows without the policy's column (never cached). */
  stale?: MaskingPolicy[];
  /** Which result columns the rewrite masks (the response's `masked_columns`), planned with it. */
  marks?: ResultMarks;
  /** Masking at the result (result-masking.ts): the row transform that masks the select items. */
  atResult?: (columns: string[], rows: unknown[][]) => unknown[][];
}


export interface MaskingSettings {
  /** project.yml `masking.enforce_without_auth`: mask for callers of a server without --auth. */
  enforceWithoutAuth: boolean;
}

export class MaskingEnforcer {
  readonly relations: RelationCatalog;
  private readonly cache = new Map<string, CachedRewrite>();
  /** How new rewrites were made: masked at the result, masked late, wrappers spliced into the text, deparsed from a tree, or left to the post-execution fallback. */
  readonly stats = { result: 0, late: 0, spliced: 0, deparsed: 0, fallbacks: 0 };

  /** Policies derived from column lineage (derived.ts), enforced like explicit ones. */
  readonly derived: DerivedPolicies;
  /** The mask of each masked column of a relation (mask-plan.ts). */
  private readonly plans: MaskPlanner;
  /** Wrapper and late-mask templates and the final checks of a rewrite (final-checks.ts). */
  private readonly checks: FinalChecks;
  /** Masking at the result (result-masking.ts). */
  private readonly atResult: ResultMasker;

  constructor(
    private readonly ctx: Pick<PluginContext, 'db' | 'clock'>,
    private readonly catalog: MethodCatalog,
    private readonly store: PolicyStore,
    private readonly settings: () => MaskingSettings,
    private readonly log: Logger,
    lineage: () => Promise<LineageService | undefined> = async () => undefined,
    /** The key schema's refusal; the plugin's gate (gate.ts) shares its own, so a parse is walked once. */
    private readonly keySchema: KeySchemaGuard = new KeySchemaGuard(ctx.db),
  ) {
    this.relations = new RelationCatalog(ctx.db.catalog, () => ctx.clock.now());
    this.plans = new MaskPlanner(catalog);
    this.checks = new FinalChecks(ctx, log);
    this.atResult = new ResultMasker(catalog, log);
    this.derived = new DerivedPolicies(lineage, store, this.relations, log);
  }

  /** Explicit and derived policies, current (derived ones are derived again only after a change). */
  private async allPolicies(): Promise<readonly MaskingPolicy[]> {
    await this.store.ensureLoaded();
    const derived = await this.derived.current();
    return derived.length ? [...this.store.all(), ...derived] : this.store.all();
  }

  /** Changes with every explicit or derived policy change (part of the rewrite cache key). */
  private get policyVersion(): string {
    return `${this.store.version}.${this.derived.version}`;
  }

  /** Without --auth every caller is an unauthenticated admin: exempt unless enforce_without_auth. */
  private callerClass(caller: Caller): 'exempt-all' | 'bound-all' | string {
    if (!caller.authenticated) return this.settings().enforceWithoutAuth ? 'bound-all' : 'exempt-all';
    return caller.role;
  }

  /**
   * Policies that mask for this caller (rule 1). Table endpoints are not narrowed to their exact
   * table: a sample or profile of a view (or a copy) of a masked table must mask at least what
   * `/api/query` masks for `SELECT *` of it, or the endpoint would be a way around the query's
   * masks. A policy on the very table still wins over a namesake (masksFor).
   */
  bindingPolicies(caller: Caller, all: readonly MaskingPolicy[] = this.store.all()): MaskingPolicy[] {
    const cls = this.callerClass(caller);
    if (cls === 'exempt-all') return [];
    // A declassification (`method: none`) binds everyone: it lifts masking of its column for every role.
    return all.filter((p) => cls === 'bound-all' || p.method === DECLASSIFY_METHOD || !p.exempted_roles.includes(cls));
  }

  /** Columns of schema.table this caller sees masked (the `masking` service). */
  async maskedColumns(caller: Caller, schema: string, table: string): Promise<string[]> {
    if (schema.toLowerCase() === KEY_SCHEMA) {
      // Nothing may describe the key table's values: every column counts as masked, for everyone.
      const snap = await this.relations.snapshot();
      return RelationCatalog.resolve(snap, { catalog: '', schema, table })?.columns.map((c) => c.name) ?? [];
    }
    const policies = this.bindingPolicies(caller, await this.allPolicies());
    if (!policies.some((p) => p.method !== DECLASSIFY_METHOD)) return [];
    const snap = await this.relations.snapshot();
    const rel = RelationCatalog.resolve(snap, { catalog: '', schema, table });
    if (!rel) {
      const own = (p: MaskingPolicy) => p.schema_name.toLowerCase() === schema.toLowerCase() && p.table_name.toLowerCase() === table.toLowerCase();
      return policies.filter((p) => own(p) && p.method !== DECLASSIFY_METHOD).map((p) => p.column_name);
    }
    return this.plans.masksFor(rel, policies).map((m) => m.column);
  }


  /** Lower-case names of the columns any policy masks for this caller (the `masking` service). */
  async maskedColumnNames(caller: Caller): Promise<string[]> {
    const policies = this.bindingPolicies(caller, await this.allPolicies()).filter((p) => p.method !== DECLASSIFY_METHOD);
    return [...new Set(policies.map((p) => p.column_name.toLowerCase()))];
  }


  invalidate(): void {
    this.cache.clear();
  }

  /** Catalogs of warehouse targets queries ran on, by target id (a query on a target names its relations). */
  private readonly targetRelations = new Map<string, RelationCatalog>();

  /** The catalog a query's names resolve in: its target's, or the DuckDB file's. */
  private relationsOf(q: QueryContext): RelationCatalog {
    const target = q.target;
    if (!target) return this.relations;
    let rel = this.targetRelations.get(target.id);
    if (!rel) this.targetRelations.set(target.id, (rel = new RelationCatalog(target, () => this.ctx.clock.now())));
    return rel;
  }

  /** Drops every target catalog snapshot (the events that invalidate the local one). */
  invalidateTargets(): void {
    for (const rel of this.targetRelations.values()) rel.invalidate();
  }

  /** The beforeQuery tap: the key schema's refusal, then the masks. */
  async beforeQuery(q: QueryContext): Promise<void> {
    await this.keySchema.check(q);
    await this.enforce(q);
  }

  /** The masks of a query whose key-schema check was done (the gate does it for every caller, then calls this). */
  async enforce(q: QueryContext): Promise<void> {
    if (this.callerClass(q.caller) === 'exempt-all') return;
    const policies = this.bindingPolicies(q.caller, await this.allPolicies());
    if (!policies.some((p) => p.method !== DECLASSIFY_METHOD)) return;
    const relations = this.relationsOf(q);
    let snap = await relations.snapshot();
    const cls = this.callerClass(q.caller);
    const canWrite = hasPermission(q.caller, 'write') && cls !== 'bound-all';
    const atResult = q.runsRowTransforms === true;
    const keyOf = (epoch: number) => `${cls}|${canWrite}|${atResult}|${this.policyVersion}|${q.target?.id ?? ''}|${epoch}|${q.sql}`;
    let hit = this.cache.get(keyOf(snap.epoch));
    if (!hit) {
      try {
        // The kernel validated this very text first, so its parse is cached: no round trip here.
        const parsed = await this.ctx.db.parse(q.sql);
        if (!parsed.ok) {
          // Read-only validation refuses unparseable SQL; the fallback stays in place should it run anyway.
          this.fallback(q, policies, `the statement did not parse (${parsed.error})`);
          return;
        }
        let built = await this.build(q, parsed, policies, snap, canWrite);
        if (built.unresolved) {
          // A relation the snapshot does not know may be new: look again once before trusting the plan.
          const fresh = await relations.refreshIfOlderThan(50);
          if (fresh.epoch !== snap.epoch) {
            snap = fresh;
            built = await this.build(q, parsed, policies, snap, canWrite);
          }
        }
        hit = built.result;
        // A plan with unknown relations is not cached: the relation may appear before the next call.
        if (!built.unresolved) {
          if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
          this.cache.set(keyOf(snap.epoch), hit);
        }
      } catch (e) {
        if (isDpError(e)) throw e;
        this.fallback(q, policies, `the rewrite failed (${errorMessage(e)})`);
        return;
      }
    }
    if (hit.hidden) {
      throw forbidden('masking_policies_hidden', `Reading ${hit.hidden} needs the 'write' permission: it holds the masking seeds`, { table: hit.hidden });
    }
    if (hit.macro) {
      const { macro, table } = hit.macro;
      throw forbidden('masked_column_in_macro', `Macro '${macro}' reads ${table}, which has columns masked for role '${q.caller.role}'`, {
        macro,
        table,
        role: q.caller.role,
      });
    }
    if (hit.statistics) {
      throw forbidden('masked_column_statistics', `Function '${hit.statistics}' describes its input's statistics and cannot be used in a query that reads columns masked for role '${q.caller.role}'`, {
        function: hit.statistics,
        role: q.caller.role,
      });
    }
    if (hit.refusal) {
      const { column, clause } = hit.refusal;
      throw forbidden('masked_column_in_predicate', `Column '${column}' is masked for role '${q.caller.role}' and cannot be used in ${clause}`, {
        column,
        clause,
        role: q.caller.role,
      });
    }
    if (hit.stale) {
      // The catalog, even read again, shows a policy's table without its column. The statement
      // itself reads the table as it is when it runs: should the column be there by then (a
      // reload racing this query), result columns of its name are masked after execution, and
      // a statement that could return it under another name is refused.
      q.rowTransforms.push(postExecutionMask(this.catalog, hit.stale, q.originalSql, q.caller.role));
    }
    const marks = hit.marks ?? (hit.stale ? marksByName(hit.stale) : undefined);
    if (marks) q.maskedColumns = (columns) => resolveMarks(marks, columns);
    if (hit.atResult) q.rowTransforms.push(hit.atResult);
    if (hit.verify) {
      // The keys the masks read must be in their table before the statement runs.
      if (this.catalog.keys.dirty) {
        try {
          await this.catalog.keys.flush(this.ctx.db);
        } catch (e) {
          // Fail closed, and say nothing of the keys: the masks would read no key and the query is not run.
          this.log.error(`masking: could not write the masking keys (${errorMessage(e)})`);
          throw new DpError(500, 'masking_keys_unavailable', 'Masking could not prepare its keys, so the query was not run');
        }
      }
      q.sql = hit.sql;
      (q.finalChecks ??= []).push(hit.verify);
    }
  }

  private async build(q: QueryContext, parsed: Extract<ParsedSql, { ok: true }>, policies: MaskingPolicy[], snap: CatalogSnapshot, canWrite: boolean) {
    let hidden: string | undefined;
    const stale = new Set<MaskingPolicy>();
    const planFor = this.plans.planner(snap, policies, (rel) => {
      if (!canWrite && rel.schema.toLowerCase() === '_service' && rel.name.toLowerCase() === 'masking_policies') hidden ??= '_service.masking_policies';
      for (const p of MaskPlanner.missingPolicyColumns(rel, policies)) stale.add(p);
    });
    // The kernel's tree is shared: it is read here, never changed.
    const statements = parsed.tree.statements;
    const plan = planScans(statements, planFor);
    const unresolved = plan.unresolved.length > 0 || stale.size > 0;
    const result = (r: CachedRewrite) => ({ result: stale.size ? { ...r, stale: [...stale] } : r, unresolved });
    if (hidden) return result({ sql: q.sql, hidden });
    if (plan.wraps.length) {
      const statistics = statisticsCall(statements) ?? (q.macros ?? []).map((m) => statisticsCall(m.tree.statements)).find(Boolean) ?? null;
      if (statistics) return result({ sql: q.sql, statistics });
    }
    const stars: StarUse[] = [];
    const refusal = findMaskedPredicate(statements, plan.masked, stars) ?? (await starRefusal(this.ctx.db, stars, plan.wraps.flatMap((w) => w.masks.map((m) => m.column))));
    if (refusal) return result({ sql: q.sql, refusal });
    const macro = macroReadingMasks(q.macros ?? [], planFor);
    if (macro) return result({ sql: q.sql, macro });
    if (plan.wraps.length === 0) return result({ sql: q.sql });

    const marks = planResultMarks(statements[0]?.node, this.plans.scanColumns(snap, policies), plan.wraps.flatMap((w) => w.masks));
    const resolve = this.plans.sources(snap, policies);
    // Masked columns read only as whole select items (one table, or tables joined by ON), by the kernel's own run: mask the result rows.
    if (q.runsRowTransforms) {
      const exact = (mask: ColumnMask) => this.atResult.exactTwin(mask, Boolean(q.target));
      const plan = planResultMasking(statements, resolve, exact);
      if (plan) {
        this.stats.result++;
        const verify = this.checks.checker((tree) => resultPlanMismatch(plan, planResultMasking(tree.statements, resolve, exact)));
        return result({ sql: q.sql, verify, marks, atResult: this.atResult.resultMasker(plan) });
      }
    }
    // A plain SELECT over tables with every column qualified: mask where the columns are used.
    const late = planLate(statements, resolve);
    // Masks that do not parse as single expressions (a bad third-party method) are left to the wrappers' own check.
    const expressions = late ? await this.checks.lateTemplate(late).catch(() => null) : null;
    if (late && expressions) {
      const sql = spliceLate(q.sql, late);
      if (sql !== null) {
        this.stats.late++;
        return result({ sql, verify: this.checks.lateVerifier(resolve, expressions), marks });
      }
    }

    // Every distinct mask set of the plan, by wrapper SQL (the deparse path and the final check look them up).
    const templates = new Map<string, Template>();
    for (const w of plan.wraps) templates.set(wrapperSql(w.masks), await this.checks.template(w.masks));
    const templateOf = (masks: ColumnMask[]) => {
      const t = templates.get(wrapperSql(masks));
      if (!t) throw new Error('a scan was planned twice with different masks');
      return t;
    };
    let sql = needsRequalify(statements, plan.wraps) ? null : spliceRewrite(q.sql, plan.wraps, (w) => templateOf(w.masks).replaceSql);
    if (sql !== null) {
      this.stats.spliced++;
    } else {
      // Syntax the splice does not take (samples, SUMMARIZE, schema-qualified column references...):
      // rewrite a private lossless copy of the tree and let DuckDB write it back as SQL.
      const copy = readTreeJson(parsed.json) as SerializedSql;
      rewriteTree(copy, planFor, (masks) => structuredClone(templateOf(masks).subquery));
      sql = await this.ctx.db.deparse(copy);
      if (!sql) throw new Error('json_deserialize_sql returned no SQL');
      this.stats.deparsed++;
    }
    return result({ sql, verify: this.checks.verifier(planFor, (masks) => templates.get(wrapperSql(masks))?.replaceList), marks });
  }

  /** Post-execution masking of result columns by name (docs/decisions.md "Masking policy" rule 3), noted and logged. */
  private fallback(q: QueryContext, policies: MaskingPolicy[], why: string): void {
    this.stats.fallbacks++;
    refuseUntracedInFallback(policies, q.originalSql, q.caller.role);
    const note = `masking applied to result columns after execution: ${why}`;
    q.notes.push(note);
    this.log.warn(`masking: ${note}`, { purpose: q.purpose });
    q.rowTransforms.push(postExecutionMask(this.catalog, policies, q.originalSql, q.caller.role));
    const marks = marksByName(policies);
    q.maskedColumns = (columns) => resolveMarks(marks, columns);
  }
}

