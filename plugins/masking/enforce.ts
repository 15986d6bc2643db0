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
  type MacroBody,
  type ParsedSql,
  type PluginContext,
  type QueryContext,
  quoteIdent,
  quoteLiteral,
  readTreeJson,
  type SerializedSql,
  type SqlNode,
  walkSqlTree,
} from '../../sdk/index.js';
import type { MethodCatalog } from './catalog.js';
import { postExecutionMask } from './fallback.js';
import { isWholeRelation, refuseUntracedInFallback, wholeRelationMask } from './not-analysed.js';
import { KEY_SCHEMA } from './keys.js';
import type { MaskingPolicy, PolicyStore } from './policies.js';
import { type CatalogSnapshot, type Relation, RelationCatalog } from './relations.js';
import {
  type ColumnMask,
  findMaskedPredicate,
  findUnmaskedScan,
  needsRequalify,
  type PlanFor,
  planScans,
  replaceListSql,
  rewriteTree,
  type StarUse,
  starSelection,
  wrapperReplaceList,
  wrapperSql,
} from './rewrite.js';
import { findUnmaskedLate, type LatePlan, lateTemplateSql, planLate, type ResolveSource, spliceLate } from './late.js';
import { EXACT_TWINS, planResultMasking, type ResultPlan, resultPlanMismatch } from './result-masking.js';
import { spliceRewrite } from './splice.js';
import { marksByName, planResultMarks, type ResultMarks, resolveMarks, type ScanColumns } from './result-columns.js';
import { DECLASSIFY_METHOD, DerivedPolicies } from './derived.js';

const CACHE_MAX = 1000;
/** Methods whose output keeps the column's type (so a conditional mask needs no cast). */
const TYPE_PRESERVING = new Set(['null', 'noise', 'date_shift']);
const TEXT_TYPE = /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR)/i;
/**
 * Functions whose result describes their input's statistics (min/max DuckDB propagates through
 * expressions) rather than the values: on a masked column they could show raw bounds.
 */
const STATISTICS_FUNCTIONS = new Set(['stats']);
/** The keyed methods (keys.ts): on a warehouse target they mask at the result only (exactTwin). */
const KEYED_METHODS = new Set(['consistent_hash', 'noise', 'date_shift']);

/** Whether a parse names a relation of the key schema (any role is refused such a statement). */
function readsKeySchema(root: unknown): boolean {
  let found = false;
  walkSqlTree(root, (n) => {
    if (found || n.type !== 'BASE_TABLE') return;
    const parts = [n.catalog_name, n.schema_name, n.table_name].map((p) => String(p ?? '').toLowerCase());
    found = parts.includes(KEY_SCHEMA);
  });
  return found;
}

/** The first statistics function a parse calls, or null. */
function statisticsCall(root: unknown): string | null {
  let found: string | null = null;
  walkSqlTree(root, (n) => {
    if (found || n.class !== 'FUNCTION' || typeof n.function_name !== 'string') return;
    if (STATISTICS_FUNCTIONS.has(n.function_name.toLowerCase())) found = n.function_name.toLowerCase();
  });
  return found;
}

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

/** A wrapper, parsed and checked once per distinct mask set. */
interface Template {
  /** The REPLACE list as SQL text (spliced into the original text). */
  replaceSql: string;
  /** The parsed SUBQUERY node, lossless (readTreeJson): cloned for each use on the deparse path. */
  subquery: SqlNode;
  /** DuckDB's parse of the REPLACE list: the final SQL's wrappers must parse to the same. */
  replaceList: SqlNode[];
}

export interface MaskingSettings {
  /** project.yml `masking.enforce_without_auth`: mask for callers of a server without --auth. */
  enforceWithoutAuth: boolean;
}

export class MaskingEnforcer {
  readonly relations: RelationCatalog;
  private readonly cache = new Map<string, CachedRewrite>();
  private readonly templates = new Map<string, Promise<Template>>();
  /** How new rewrites were made: masked at the result, masked late, wrappers spliced into the text, deparsed from a tree, or left to the post-execution fallback. */
  readonly stats = { result: 0, late: 0, spliced: 0, deparsed: 0, fallbacks: 0 };
  /** Parsed late masks by template SQL: `qualifier\0column` (lower case) → the mask's parse. */
  private readonly lateTemplates = new Map<string, Promise<Map<string, SqlNode>>>();
  /** Parses already checked for the key schema (the kernel caches one tree per SQL text). */
  private readonly keyChecked = new WeakSet<object>();

  /** Policies derived from column lineage (derived.ts), enforced like explicit ones. */
  readonly derived: DerivedPolicies;

  constructor(
    private readonly ctx: Pick<PluginContext, 'db' | 'clock'>,
    private readonly catalog: MethodCatalog,
    private readonly store: PolicyStore,
    private readonly settings: () => MaskingSettings,
    private readonly log: Logger,
    lineage: () => Promise<LineageService | undefined> = async () => undefined,
  ) {
    this.relations = new RelationCatalog(ctx.db.catalog, () => ctx.clock.now());
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
    return this.masksFor(rel, policies).map((m) => m.column);
  }

  /**
   * Whether the snapshot's view of a relation lacks a column one of its own policies names: the
   * column may have been added since the snapshot was read (a seed reloaded with it), so the
   * plan cannot be trusted until the catalog is read again.
   */
  static missingPolicyColumns(rel: Relation, policies: MaskingPolicy[]): MaskingPolicy[] {
    const s = rel.schema.toLowerCase();
    const t = rel.name.toLowerCase();
    // Derived policies follow a model's SQL, which may be ahead of its build: only explicit ones say a column should exist.
    return policies.filter(
      (p) => !('derived' in p) && p.method !== DECLASSIFY_METHOD && p.schema_name.toLowerCase() === s && p.table_name.toLowerCase() === t && !rel.byName.has(p.column_name.toLowerCase()),
    );
  }

  /** Lower-case names of the columns any policy masks for this caller (the `masking` service). */
  async maskedColumnNames(caller: Caller): Promise<string[]> {
    const policies = this.bindingPolicies(caller, await this.allPolicies()).filter((p) => p.method !== DECLASSIFY_METHOD);
    return [...new Set(policies.map((p) => p.column_name.toLowerCase()))];
  }

  /** The mask of each masked column of a relation; column references are qualified by `qualifier` when given. */
  private masksFor(rel: Relation, policies: MaskingPolicy[], qualifier?: string): ColumnMask[] {
    const out: ColumnMask[] = [];
    // The key table is never masked (nor planned): no user statement reaches it, only the masks do.
    if (rel.schema.toLowerCase() === KEY_SCHEMA) return out;
    const chosen = new Map<string, MaskingPolicy>();
    const sameTable = (p: MaskingPolicy) => p.schema_name.toLowerCase() === rel.schema.toLowerCase() && p.table_name.toLowerCase() === rel.name.toLowerCase();
    // A model whose columns lineage does not trace may be masked as a whole (not-analysed.ts): every column the rest leaves unmasked.
    const whole = policies.find((p) => isWholeRelation(p) && sameTable(p));
    for (const col of rel.columns) {
      const name = col.name.toLowerCase();
      const candidates = policies.filter((p) => p.column_name.toLowerCase() === name);
      const wholeMask = whole && wholeRelationMask(whole, col.name, TEXT_TYPE.test(col.type));
      if (!candidates.length) {
        if (wholeMask) chosen.set(name, wholeMask);
        continue;
      }
      // Policies match by column name (rule 4, every route alike); a policy on this very table wins over one on a namesake column elsewhere.
      // An explicit policy on the table wins over a derived one; a declassification lifts masking of its own column only.
      const own = candidates.find((p) => sameTable(p) && !('derived' in p)) ?? candidates.find(sameTable);
      if (own?.method === DECLASSIFY_METHOD) continue;
      const elsewhere = candidates.filter((p) => p.method !== DECLASSIFY_METHOD);
      const pick = own ?? elsewhere.find((p) => !('derived' in p)) ?? elsewhere[0] ?? wholeMask;
      if (pick) chosen.set(name, pick);
    }
    for (const col of rel.columns) {
      const policy = chosen.get(col.name.toLowerCase());
      if (!policy) continue;
      // A condition on a column that is itself masked here would reveal it by which rows are masked: mask every row.
      const conditionMasked = Boolean(policy.condition_column && chosen.has(policy.condition_column.toLowerCase()));
      out.push({ column: col.name, expression: this.maskExpression(policy, rel, col.name, col.type, qualifier, conditionMasked), policy, type: col.type });
    }
    return out;
  }

  private maskExpression(policy: MaskingPolicy, rel: Relation, column: string, type: string, qualifier: string | undefined, unconditional: boolean): string {
    const ref = (name: string) => (qualifier === undefined ? quoteIdent(name) : `${quoteIdent(qualifier)}.${quoteIdent(name)}`);
    const raw = ref(column);
    const masked = this.catalog.expression(policy.method, raw, policy.method_config, { type });
    const condition = policy.condition_column ? rel.byName.get(policy.condition_column.toLowerCase()) : undefined;
    // A condition column the relation lacks cannot be checked: mask every row rather than none.
    if (!policy.condition_column || !condition || unconditional) return masked;
    const when = `CAST(${ref(condition.name)} AS VARCHAR) = ${quoteLiteral(policy.condition_value ?? '')}`;
    if (TYPE_PRESERVING.has(policy.method) && !TEXT_TYPE.test(type)) return `CASE WHEN ${when} THEN ${masked} ELSE ${raw} END`;
    return `CASE WHEN ${when} THEN CAST(${masked} AS VARCHAR) ELSE CAST(${raw} AS VARCHAR) END`;
  }

  /** The wrapper of a mask set, parsed by DuckDB and checked to be exactly `SELECT * REPLACE (<masks>) FROM <one table>`. */
  private template(masks: ColumnMask[]): Promise<Template> {
    const sql = wrapperSql(masks);
    let hit = this.templates.get(sql);
    if (!hit) {
      hit = this.ctx.db.parse(sql).then((parsed) => {
        if (!parsed.ok) throw new Error(`masking wrapper does not parse: ${parsed.error}`);
        const node = parsed.tree.statements.length === 1 ? parsed.tree.statements[0].node : undefined;
        const ref = node?.from_table;
        const replaceList = ref?.type === 'SUBQUERY' ? wrapperReplaceList(ref.subquery?.node) : null;
        const columns = new Set(masks.map((m) => m.column.toLowerCase()));
        if (!replaceList || replaceList.length !== columns.size || !replaceList.every((e) => columns.has(String(e?.key).toLowerCase()))) {
          throw new Error('masking wrapper does not parse to a REPLACE of the masked columns');
        }
        return { replaceSql: replaceListSql(masks), subquery: readTreeJson(parsed.json).statements[0].node.from_table, replaceList };
      });
      hit.catch(() => this.templates.delete(sql));
      if (this.templates.size > CACHE_MAX) this.templates.delete(this.templates.keys().next().value as string);
      this.templates.set(sql, hit);
    }
    return hit;
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

  /**
   * Refuses any statement naming the key schema (or a macro reaching it), whatever the caller's
   * role: the padded keys must never reach a result, an error or a profile.
   */
  private async refuseKeySchema(q: QueryContext): Promise<void> {
    const parsed = await this.ctx.db.parse(q.originalSql);
    const trees: object[] = [...(parsed.ok ? [parsed.tree] : []), ...(q.macros ?? []).map((m) => m.tree)];
    for (const tree of trees) {
      if (this.keyChecked.has(tree)) continue;
      if (readsKeySchema((tree as SerializedSql).statements)) {
        throw forbidden('internal_table', `${KEY_SCHEMA} is internal to dp and cannot be queried`, { table: KEY_SCHEMA });
      }
      this.keyChecked.add(tree);
    }
  }

  /** The beforeQuery tap. */
  async beforeQuery(q: QueryContext): Promise<void> {
    await this.refuseKeySchema(q);
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

  /**
   * The first star expression of a predicate clause that expands to a masked column. DuckDB
   * expands `*`, `COLUMNS(...)` and `ORDER BY ALL` before binding, so each is resolved against
   * the masked columns the query reads; a regular expression is matched by DuckDB itself (RE2,
   * as COLUMNS does), a lambda or anything else counts as matching every masked column.
   */
  private async starRefusal(stars: StarUse[], maskedColumns: string[]): Promise<{ column: string; clause: string } | null> {
    if (!stars.length || !maskedColumns.length) return null;
    const names = [...new Set(maskedColumns)];
    for (const { clause, star } of stars) {
      const sel = starSelection(star);
      let hit: string | undefined;
      if (sel.kind === 'all') hit = names.find((n) => !sel.exclude.has(n.toLowerCase()));
      else if (sel.kind === 'names') hit = names.find((n) => sel.names.some((x) => x.toLowerCase() === n.toLowerCase()));
      else if (sel.kind === 'regex') {
        try {
          const list = `[${names.map((n) => quoteLiteral(n)).join(', ')}]::VARCHAR[]`;
          const pattern = quoteLiteral(sel.pattern);
          const rows = await this.ctx.db.all<{ n: string }>(`SELECT unnest(list_filter(${list}, n -> regexp_matches(n, ${pattern}) OR regexp_matches(lower(n), ${pattern}))) AS n`);
          hit = rows[0]?.n;
        } catch {
          hit = names[0];
        }
      } else hit = names[0];
      if (hit) return { column: hit.toLowerCase(), clause };
    }
    return null;
  }

  /** The masks of every scan, as planned from one catalog snapshot. */
  private planner(snap: CatalogSnapshot, policies: MaskingPolicy[], seen?: (rel: Relation) => void): PlanFor {
    return (ref) => {
      const rel = RelationCatalog.resolve(snap, ref);
      if (!rel) return undefined;
      seen?.(rel);
      return this.masksFor(rel, policies);
    };
  }

  /**
   * The first user macro the query reaches (read-only validation lists them, nested ones
   * included) whose body reads a relation with masked columns, or one the catalog does not
   * know. DuckDB expands macros after the rewrite, so such a macro would read the table unmasked.
   */
  private macroReadingMasks(macros: MacroBody[], planFor: PlanFor): { macro: string; table: string } | null {
    for (const { name, tree } of macros) {
      const plan = planScans(tree.statements, planFor);
      const read = plan.wraps[0]?.ref ?? plan.unresolved[0];
      if (read) return { macro: name, table: [read.catalog, read.schema, read.table].filter(Boolean).join('.') };
    }
    return null;
  }

  /** The result-column tracer's view of the same plan: each relation's columns and its masks. */
  private scanColumns(snap: CatalogSnapshot, policies: MaskingPolicy[]): ScanColumns {
    return (ref) => {
      const rel = RelationCatalog.resolve(snap, ref);
      return rel ? { columns: rel.columns.map((c) => c.name), masks: this.masksFor(rel, policies) } : undefined;
    };
  }

  /** Late masking's view of the same plan: each relation's columns and its masks under a given qualifier. */
  private sources(snap: CatalogSnapshot, policies: MaskingPolicy[]): ResolveSource {
    return (ref) => {
      const rel = RelationCatalog.resolve(snap, ref);
      if (!rel) return undefined;
      return { columns: new Set(rel.byName.keys()), masks: (qualifier) => this.masksFor(rel, policies, qualifier) };
    };
  }

  /**
   * DuckDB's parse of every mask of a late plan, checked to be one select item each (so the
   * text of a mask cannot reach beyond its parentheses): `qualifier\0column` → its parse.
   */
  private lateTemplate(plan: LatePlan): Promise<Map<string, SqlNode>> {
    const sql = lateTemplateSql(plan.masks);
    let hit = this.lateTemplates.get(sql);
    if (!hit) {
      hit = this.ctx.db.parse(sql).then((parsed) => {
        if (!parsed.ok) throw new Error(`late masks do not parse: ${parsed.error}`);
        const items = parsed.tree.statements.length === 1 ? parsed.tree.statements[0].node.select_list : undefined;
        if (!Array.isArray(items) || items.length !== plan.masks.length || items.some((e: SqlNode, i: number) => e?.alias !== `m${i}`)) {
          throw new Error('late masks do not parse to one expression each');
        }
        return new Map(plan.masks.map(({ qualifier, mask }, i) => [`${qualifier.toLowerCase()}\u0000${mask.column.toLowerCase()}`, items[i] as SqlNode]));
      });
      hit.catch(() => this.lateTemplates.delete(sql));
      if (this.lateTemplates.size > CACHE_MAX) this.lateTemplates.delete(this.lateTemplates.keys().next().value as string);
      this.lateTemplates.set(sql, hit);
    }
    return hit;
  }

  private async build(q: QueryContext, parsed: Extract<ParsedSql, { ok: true }>, policies: MaskingPolicy[], snap: CatalogSnapshot, canWrite: boolean) {
    let hidden: string | undefined;
    const stale = new Set<MaskingPolicy>();
    const planFor = this.planner(snap, policies, (rel) => {
      if (!canWrite && rel.schema.toLowerCase() === '_service' && rel.name.toLowerCase() === 'masking_policies') hidden ??= '_service.masking_policies';
      for (const p of MaskingEnforcer.missingPolicyColumns(rel, policies)) stale.add(p);
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
    const refusal = findMaskedPredicate(statements, plan.masked, stars) ?? (await this.starRefusal(stars, plan.wraps.flatMap((w) => w.masks.map((m) => m.column))));
    if (refusal) return result({ sql: q.sql, refusal });
    const macro = this.macroReadingMasks(q.macros ?? [], planFor);
    if (macro) return result({ sql: q.sql, macro });
    if (plan.wraps.length === 0) return result({ sql: q.sql });

    const marks = planResultMarks(statements[0]?.node, this.scanColumns(snap, policies), plan.wraps.flatMap((w) => w.masks));
    const resolve = this.sources(snap, policies);
    // Masked columns read only as whole select items (one table, or tables joined by ON), by the kernel's own run: mask the result rows.
    if (q.runsRowTransforms) {
      const exact = (mask: ColumnMask) => this.exactTwin(mask, Boolean(q.target));
      const plan = planResultMasking(statements, resolve, exact);
      if (plan) {
        this.stats.result++;
        const verify = this.checker((tree) => resultPlanMismatch(plan, planResultMasking(tree.statements, resolve, exact)));
        return result({ sql: q.sql, verify, marks, atResult: this.resultMasker(plan) });
      }
    }
    // A plain SELECT over tables with every column qualified: mask where the columns are used.
    const late = planLate(statements, resolve);
    // Masks that do not parse as single expressions (a bad third-party method) are left to the wrappers' own check.
    const expressions = late ? await this.lateTemplate(late).catch(() => null) : null;
    if (late && expressions) {
      const sql = spliceLate(q.sql, late);
      if (sql !== null) {
        this.stats.late++;
        return result({ sql, verify: this.lateVerifier(resolve, expressions), marks });
      }
    }

    // Every distinct mask set of the plan, by wrapper SQL (the deparse path and the final check look them up).
    const templates = new Map<string, Template>();
    for (const w of plan.wraps) templates.set(wrapperSql(w.masks), await this.template(w.masks));
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
    return result({ sql, verify: this.verifier(planFor, (masks) => templates.get(wrapperSql(masks))?.replaceList), marks });
  }

  /**
   * Whether a mask can be applied to result values by its JavaScript twin, exactly as its SQL would (result-masking.ts).
   * On a warehouse target a keyed mask is applied only so: the target returns the raw column to this process alone and
   * the twin computes the same HMAC under the same key here, so the key never reaches the target (docs/security.md).
   */
  private exactTwin(mask: ColumnMask, onTarget: boolean): boolean {
    const p = mask.policy;
    if (!p || p.condition_column || !this.catalog.builtin(p.method)) return false;
    if (onTarget && KEYED_METHODS.has(p.method)) return true;
    return EXACT_TWINS.has(p.method) && mask.type === 'VARCHAR';
  }

  /** The row transform of a result plan: each masked item's values through its method's twin. */
  private resultMasker(plan: ResultPlan): (columns: string[], rows: unknown[][]) => unknown[][] {
    const masks = plan.items.map(({ index, mask }) => ({ index, method: mask.policy!.method, config: mask.policy!.method_config, info: { type: mask.type } }));
    const refuse = (problem: string) => {
      this.log.error(`masking: the result does not match its plan (${problem}); the query was refused`);
      return new DpError(500, 'masking_unverified', `Masking could not confirm its plan for this result (${problem}), so it was not returned`);
    };
    return (columns, rows) => {
      if (columns.length !== plan.width) throw refuse(`${columns.length} columns where the statement selects ${plan.width}`);
      for (const row of rows) {
        for (const m of masks) {
          const value = row[m.index];
          // A keyed mask on a target may take numbers (noise); every other twin, text only.
          if (value !== null && typeof value !== 'string' && !(KEYED_METHODS.has(m.method) && typeof value === 'number')) throw refuse(`a value of ${columns[m.index]} is not text`);
          row[m.index] = this.catalog.apply(m.method, value, m.config, m.info);
        }
      }
      return rows;
    };
  }

  /** The final check of a late rewrite: on DuckDB's parse of the SQL that will run, every masked column is read through its mask. */
  private lateVerifier(resolve: ResolveSource, expressions: Map<string, SqlNode>): (tree: SerializedSql) => void {
    return this.checker((tree) => findUnmaskedLate(tree.statements, resolve, (qualifier, column) => expressions.get(`${qualifier}\u0000${column}`)));
  }

  /** The final check of a rewrite: on DuckDB's parse of the SQL that will run, every masked scan must be wrapped by its masks. */
  private verifier(planFor: PlanFor, expected: (masks: ColumnMask[]) => SqlNode[] | undefined): (tree: SerializedSql) => void {
    return this.checker((tree) => findUnmaskedScan(tree.statements, planFor, expected));
  }

  /** A ctx.finalChecks entry from a problem finder: refuses the query on a problem, checks each parse once. */
  private checker(findProblem: (tree: SerializedSql) => string | null): (tree: SerializedSql) => void {
    const verified = new WeakSet<object>();
    return (tree) => {
      // The kernel's parse cache hands back the same tree for the same text: check it once.
      if (verified.has(tree)) return;
      const problem = findProblem(tree);
      if (problem) {
        this.log.error(`masking: the rewritten SQL does not mask as planned (${problem}); the query was refused`);
        throw new DpError(500, 'masking_unverified', `Masking could not confirm its rewrite of this query (${problem}), so it was not run`);
      }
      verified.add(tree);
    };
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

