/**
 * The final checks of a rewrite (ctx.finalChecks entries): the wrapper and late-mask templates,
 * each parsed by DuckDB once per mask set and checked to be exactly the expected REPLACE list or
 * select items (so a mask's text cannot reach past its parentheses), and the checkers that
 * confirm on DuckDB's parse of the SQL that will run that every masked column is read through
 * its mask, refusing the query (500 masking_unverified) otherwise.
 */
import { DpError, type Logger, type PluginContext, readTreeJson, type SerializedSql, type SqlNode } from '../../sdk/index.js';
import { type ColumnMask, findUnmaskedScan, type PlanFor, replaceListSql, wrapperReplaceList, wrapperSql } from './rewrite.js';
import { findUnmaskedLate, type LatePlan, lateTemplateSql, type ResolveSource } from './late.js';

/** Most entries kept by each of the masking caches (rewrites, templates). */
export const CACHE_MAX = 1000;

/** A wrapper, parsed and checked once per distinct mask set. */
export interface Template {
  /** The REPLACE list as SQL text (spliced into the original text). */
  replaceSql: string;
  /** The parsed SUBQUERY node, lossless (readTreeJson): cloned for each use on the deparse path. */
  subquery: SqlNode;
  /** DuckDB's parse of the REPLACE list: the final SQL's wrappers must parse to the same. */
  replaceList: SqlNode[];
}

export class FinalChecks {
  private readonly templates = new Map<string, Promise<Template>>();
  /** Parsed late masks by template SQL: `qualifier\0column` (lower case) → the mask's parse. */
  private readonly lateTemplates = new Map<string, Promise<Map<string, SqlNode>>>();

  constructor(
    private readonly ctx: Pick<PluginContext, 'db'>,
    private readonly log: Logger,
  ) {}

  /** The wrapper of a mask set, parsed by DuckDB and checked to be exactly `SELECT * REPLACE (<masks>) FROM <one table>`. */
  template(masks: ColumnMask[]): Promise<Template> {
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

  /**
   * DuckDB's parse of every mask of a late plan, checked to be one select item each (so the
   * text of a mask cannot reach beyond its parentheses): `qualifier\0column` → its parse.
   */
  lateTemplate(plan: LatePlan): Promise<Map<string, SqlNode>> {
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

  /** The final check of a late rewrite: on DuckDB's parse of the SQL that will run, every masked column is read through its mask. */
  lateVerifier(resolve: ResolveSource, expressions: Map<string, SqlNode>): (tree: SerializedSql) => void {
    return this.checker((tree) => findUnmaskedLate(tree.statements, resolve, (qualifier, column) => expressions.get(`${qualifier}\u0000${column}`)));
  }

  /** The final check of a rewrite: on DuckDB's parse of the SQL that will run, every masked scan must be wrapped by its masks. */
  verifier(planFor: PlanFor, expected: (masks: ColumnMask[]) => SqlNode[] | undefined): (tree: SerializedSql) => void {
    return this.checker((tree) => findUnmaskedScan(tree.statements, planFor, expected));
  }

  /** A ctx.finalChecks entry from a problem finder: refuses the query on a problem, checks each parse once. */
  checker(findProblem: (tree: SerializedSql) => string | null): (tree: SerializedSql) => void {
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
}
