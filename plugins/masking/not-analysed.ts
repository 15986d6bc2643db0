/**
 * Masking of models whose columns lineage does not trace: a model written natively for a target
 * (`@config dialect=clickhouse`, lineage `method: "not_analysed"`), and a model whose `SELECT *`
 * reads such a model (its lineage holds a `*` column from it). Derivation cannot say which of
 * their columns carry a masked value, so it must not drop the masks of what they read: when
 * anything such a model reads is masked, the model gets one **whole-relation** derived policy
 * (`column_name: "*"`), and every column of its relation is masked for the same roles (text
 * `redact`, other types `null`), as a computed column would be. An explicit policy on one of its
 * columns still wins (`method: none` declassifies that column). The roles still exempt are those
 * every mask it reads exempts.
 *
 * "Masked" here is conservative: a relation read counts as masked when a policy is on it (explicit
 * or derived), or when a namesake policy (decisions.md rule 4) names one of its columns, or when
 * its columns are not known (then any namesake policy counts); a model whose very references are
 * not known (`reads_known: false`) counts as reading every masked column.
 */
import { forbidden, type ModelLineage } from '../../sdk/index.js';
import type { MaskingPolicy } from './policies.js';

/** The column name of a whole-relation policy. */
export const WHOLE_RELATION = '*';

const lc = (s: string) => s.toLowerCase();

export function isWholeRelation(p: Pick<MaskingPolicy, 'column_name'>): boolean {
  return p.column_name === WHOLE_RELATION;
}

/** The relations whose columns the model's lineage cannot trace, or null when it traces them all. */
export function untracedReads(model: ModelLineage, isWholeMasked: (relation: string) => boolean): { relations: string[]; all: boolean } | null {
  if (model.method === 'not_analysed') return { relations: model.depends_on, all: model.reads_known === false };
  // A `SELECT *` over an untraced, masked model hides which of its columns it passes on.
  const star = model.columns[WHOLE_RELATION]?.map((s) => s.source_table).filter(isWholeMasked) ?? [];
  return star.length ? { relations: [...new Set(star)], all: false } : null;
}

/**
 * The policies that reach what an untraced model reads (see the file comment). `policiesOn` gives
 * the explicit and derived policies of a relation, `columnsOf` its columns when known, `namesakes`
 * the explicit policies that mask by column name everywhere.
 */
export function masksRead(
  reads: { relations: string[]; all: boolean },
  policiesOn: (relation: string) => MaskingPolicy[],
  columnsOf: (relation: string) => string[] | undefined,
  namesakes: ReadonlyMap<string, MaskingPolicy>,
): MaskingPolicy[] {
  if (reads.all) return [...namesakes.values()];
  const hits: MaskingPolicy[] = [];
  for (const relation of reads.relations) {
    hits.push(...policiesOn(relation));
    const columns = columnsOf(relation);
    if (!columns) hits.push(...namesakes.values());
    else for (const c of columns) if (namesakes.has(lc(c))) hits.push(namesakes.get(lc(c))!);
  }
  return [...new Set(hits)];
}

/** A whole-relation policy as the mask of one column of the relation (by its type, as derived computed columns are). */
export function wholeRelationMask<P extends MaskingPolicy>(policy: P, column: string, isText: boolean): P {
  return { ...policy, column_name: column, method: isText ? 'redact' : 'null', method_config: {} };
}

/**
 * The post-execution fallback masks result columns by name, which cannot tell a whole-relation
 * policy's columns: a statement that names such a relation and could not be rewritten is refused.
 */
export function refuseUntracedInFallback(policies: readonly MaskingPolicy[], sql: string, role: string): void {
  const text = lc(sql);
  const hit = policies.find((p) => isWholeRelation(p) && text.includes(lc(p.table_name)));
  if (hit) {
    throw forbidden('masked_column_unverifiable', `${hit.schema_name}.${hit.table_name} is masked for role '${role}' (dp does not trace its columns) and this statement could not be checked`, {
      table: `${hit.schema_name}.${hit.table_name}`,
      role,
    });
  }
}
