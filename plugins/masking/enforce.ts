/**
 * Enforcement on the kernel's beforeQuery hook: decides which policies bind the caller, plans
 * the masks of every table scan from the live catalog, rewrites the SQL (cached per SQL text,
 * caller class, table, policy version and catalog epoch), refuses masked columns in
 * predicates, and falls back to masking result columns after execution when the rewrite
 * cannot be done.
 */
import {
  type Caller,
  errorMessage,
  forbidden,
  hasPermission,
  isDpError,
  type Logger,
  type PluginContext,
  type QueryContext,
  quoteIdent,
  quoteLiteral,
  type SerializedSql,
  type SqlNode,
} from '../../sdk/index.js';
import type { MethodCatalog } from './catalog.js';
import { postExecutionMask } from './fallback.js';
import type { MaskingPolicy, PolicyStore } from './policies.js';
import { type CatalogSnapshot, type Relation, RelationCatalog, type RelationRef } from './relations.js';
import { type ColumnMask, findMaskedPredicate, rewriteTree } from './rewrite.js';
import { parseTreeJson, stringifyTreeJson } from './tree-json.js';

const CACHE_MAX = 1000;
/** Methods whose output keeps the column's type (so a conditional mask needs no cast). */
const TYPE_PRESERVING = new Set(['null', 'noise', 'date_shift']);
const TEXT_TYPE = /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR)/i;

interface CachedRewrite {
  sql: string;
  /** Set when the query is refused (cached too: the same query is refused the same way). */
  refusal?: { column: string; clause: string };
  hidden?: string;
}

export interface MaskingSettings {
  /** project.yml `masking.enforce_without_auth`: mask for callers of a server without --auth. */
  enforceWithoutAuth: boolean;
}

export class MaskingEnforcer {
  readonly relations: RelationCatalog;
  private readonly cache = new Map<string, CachedRewrite>();
  private readonly templates = new Map<string, Promise<SqlNode>>();

  constructor(
    private readonly ctx: Pick<PluginContext, 'db'>,
    private readonly catalog: MethodCatalog,
    private readonly store: PolicyStore,
    private readonly settings: () => MaskingSettings,
    private readonly log: Logger,
  ) {
    this.relations = new RelationCatalog(ctx.db);
  }

  /** Without --auth every caller is an unauthenticated admin: exempt unless enforce_without_auth. */
  private callerClass(caller: Caller): 'exempt-all' | 'bound-all' | string {
    if (!caller.authenticated) return this.settings().enforceWithoutAuth ? 'bound-all' : 'exempt-all';
    return caller.role;
  }

  /** Policies that mask for this caller (rule 1), narrowed to the exact table for table endpoints (rule 4). */
  bindingPolicies(caller: Caller, table?: { schema: string; table: string }): MaskingPolicy[] {
    const cls = this.callerClass(caller);
    if (cls === 'exempt-all') return [];
    let policies = this.store.all().filter((p) => cls === 'bound-all' || !p.exempted_roles.includes(cls));
    if (table) {
      const s = table.schema.toLowerCase();
      const t = table.table.toLowerCase();
      policies = policies.filter((p) => p.schema_name.toLowerCase() === s && p.table_name.toLowerCase() === t);
    }
    return policies;
  }

  /** Columns of schema.table this caller sees masked (the `masking` service). */
  async maskedColumns(caller: Caller, schema: string, table: string): Promise<string[]> {
    await this.store.ensureLoaded();
    const policies = this.bindingPolicies(caller, { schema, table });
    if (!policies.length) return [];
    const snap = await this.relations.snapshot();
    const rel = RelationCatalog.resolve(snap, { catalog: '', schema, table });
    if (!rel) return policies.map((p) => p.column_name);
    return this.masksFor(rel, policies, true).map((m) => m.column);
  }

  /** The mask of each masked column of a relation. */
  private masksFor(rel: Relation, policies: MaskingPolicy[], exactTable: boolean): ColumnMask[] {
    const out: ColumnMask[] = [];
    for (const col of rel.columns) {
      const name = col.name.toLowerCase();
      const candidates = policies.filter((p) => p.column_name.toLowerCase() === name);
      if (!candidates.length) continue;
      const sameTable = (p: MaskingPolicy) => p.schema_name.toLowerCase() === rel.schema.toLowerCase() && p.table_name.toLowerCase() === rel.name.toLowerCase();
      // Ad-hoc queries match by column name alone (rule 4); a policy on this very table wins over one on a namesake column elsewhere.
      const policy = exactTable ? candidates.find(sameTable) : (candidates.find(sameTable) ?? candidates[0]);
      if (!policy) continue;
      out.push({ column: col.name, expression: this.maskExpression(policy, rel, col.name, col.type) });
    }
    return out;
  }

  private maskExpression(policy: MaskingPolicy, rel: Relation, column: string, type: string): string {
    const raw = quoteIdent(column);
    const masked = this.catalog.expression(policy.method, raw, policy.method_config, { type });
    const condition = policy.condition_column ? rel.byName.get(policy.condition_column.toLowerCase()) : undefined;
    // A condition column the relation lacks cannot be checked: mask every row rather than none.
    if (!policy.condition_column || !condition) return masked;
    const when = `CAST(${quoteIdent(condition.name)} AS VARCHAR) = ${quoteLiteral(policy.condition_value ?? '')}`;
    if (TYPE_PRESERVING.has(policy.method) && !TEXT_TYPE.test(type)) return `CASE WHEN ${when} THEN ${masked} ELSE ${raw} END`;
    return `CASE WHEN ${when} THEN CAST(${masked} AS VARCHAR) ELSE CAST(${raw} AS VARCHAR) END`;
  }

  private template(sql: string): Promise<SqlNode> {
    let hit = this.templates.get(sql);
    if (!hit) {
      hit = this.parse(sql).then((parsed) => {
        if (!parsed.ok) throw new Error(`masking wrapper does not parse: ${parsed.error}`);
        return parsed.tree.statements[0].node.from_table as SqlNode;
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

  /** DuckDB's parse tree of one statement, read losslessly (see tree-json.ts). */
  async parse(sql: string): Promise<{ ok: true; tree: SerializedSql } | { ok: false; error: string }> {
    const text = await this.ctx.db.value<string>('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
    const tree = parseTreeJson(text ?? '{}');
    if (tree.error) return { ok: false, error: String(tree.error_message ?? 'unparseable SQL') };
    return { ok: true, tree: tree as SerializedSql };
  }

  /** json_deserialize_sql of a (rewritten) tree. */
  async deparse(tree: SerializedSql): Promise<string> {
    const sql = await this.ctx.db.value<string>('SELECT json_deserialize_sql($1::JSON)', [stringifyTreeJson(tree)]);
    if (!sql) throw new Error('json_deserialize_sql returned no SQL');
    return sql;
  }

  /** The beforeQuery tap. */
  async beforeQuery(q: QueryContext): Promise<void> {
    if (this.callerClass(q.caller) === 'exempt-all') return;
    await this.store.ensureLoaded();
    const policies = this.bindingPolicies(q.caller, q.table);
    if (!policies.length) return;
    let snap = await this.relations.snapshot();
    const cls = this.callerClass(q.caller);
    const canWrite = hasPermission(q.caller, 'write') && cls !== 'bound-all';
    const keyOf = (epoch: number) => `${cls}|${canWrite}|${q.table ? `${q.table.schema}.${q.table.table}` : ''}|${this.store.version}|${epoch}|${q.sql}`;
    let hit = this.cache.get(keyOf(snap.epoch));
    if (!hit) {
      try {
        const parsed = await this.parse(q.sql);
        if (!parsed.ok) {
          // Read-only validation refuses unparseable SQL next; the fallback stays in place should it run anyway.
          this.fallback(q, policies, `the statement did not parse (${parsed.error})`);
          return;
        }
        let built = await this.build(q, parsed.tree, policies, snap, canWrite);
        if (built.unresolved) {
          // A relation the snapshot does not know may be new: look again once before trusting the plan.
          const fresh = await this.relations.refreshIfOlderThan(50);
          if (fresh.epoch !== snap.epoch) {
            snap = fresh;
            built = await this.build(q, parsed.tree, policies, snap, canWrite);
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
    if (hit.refusal) {
      const { column, clause } = hit.refusal;
      throw forbidden('masked_column_in_predicate', `Column '${column}' is masked for role '${q.caller.role}' and cannot be used in ${clause}`, {
        column,
        clause,
        role: q.caller.role,
      });
    }
    q.sql = hit.sql;
  }

  private async build(q: QueryContext, tree: SerializedSql, policies: MaskingPolicy[], snap: CatalogSnapshot, canWrite: boolean) {
    const exact = q.table;
    let hidden: string | undefined;
    const planFor = (ref: RelationRef): ColumnMask[] | undefined => {
      const rel = RelationCatalog.resolve(snap, ref);
      if (!rel) return undefined;
      if (!canWrite && rel.schema.toLowerCase() === '_service' && rel.name.toLowerCase() === 'masking_policies') hidden ??= '_service.masking_policies';
      if (exact && (rel.schema.toLowerCase() !== exact.schema.toLowerCase() || rel.name.toLowerCase() !== exact.table.toLowerCase())) return [];
      return this.masksFor(rel, policies, Boolean(exact));
    };
    const clone = structuredClone(tree);
    const original = tree.statements;
    const out = await rewriteTree(clone, planFor, (sql) => this.template(sql));
    const unresolved = out.unresolved.length > 0;
    if (hidden) return { result: { sql: q.sql, hidden }, unresolved };
    const refusal = findMaskedPredicate(original, out.masked) ?? undefined;
    if (refusal) return { result: { sql: q.sql, refusal }, unresolved };
    if (out.wrapped === 0) return { result: { sql: q.sql }, unresolved };
    const sql = await this.deparse(out.tree);
    return { result: { sql }, unresolved };
  }

  /** Post-execution masking of result columns by name (SPEC.md rule 3), noted and logged. */
  private fallback(q: QueryContext, policies: MaskingPolicy[], why: string): void {
    const note = `masking applied to result columns after execution: ${why}`;
    q.notes.push(note);
    this.log.warn(`masking: ${note}`, { purpose: q.purpose });
    q.rowTransforms.push(postExecutionMask(this.catalog, policies, q.originalSql, q.caller.role));
  }
}
