/**
 * Which result columns of a query the server masked (`masked_columns` of `POST /api/query`),
 * as the masking rewrite that ran planned them. Which columns are masked is not secret; their
 * values are.
 */
export interface MaskedResultColumn {
  /** Position of the column in `columns` (0-based). */
  index: number;
  /** The result column's name as in `columns`. */
  name: string;
  /** The masking method of the policy behind it (for a column computed from masked input, the method of that input). */
  method: string;
  /** `column`: the masked value itself, passed through or renamed; `expression`: a value computed from masked input. */
  via: 'column' | 'expression';
  /** Id of the policy (`derived:schema.table.column` for one derived from lineage). */
  policy?: string;
  /** `schema.table.column` of the policy's column. */
  source?: string;
  /** Set when the policy was derived from column lineage. */
  derived?: boolean;
}
