/**
 * The lineage of a model written natively for a target (`-- @config dialect=clickhouse`): DuckDB's
 * parser does not read its SQL, so its columns are not traced. It says so (`method:
 * "not_analysed"`), and what it knows: the relations it reads (`depends_on`; `reads_known: false`
 * when even those are only what `@depends_on` declares), each output column attributed to every
 * one of them with `source_column: "*"` (no claim that a column comes from a namesake upstream).
 * The columns are the built relation's when the catalog has it, else one `*`. The masking plugin
 * treats such a model as masked wherever what it reads carries a mask (docs/security.md).
 */
import type { ColumnSource, ModelInfo, ModelLineage } from '../../sdk/index.js';
import type { ColumnLineageResult } from './columns.js';

export function notAnalysed(model: ModelInfo, builtColumns: string[] | undefined): { result: ColumnLineageResult; lineage: ModelLineage } {
  const sources = (): ColumnSource[] => model.depends_on.map((u) => ({ source_table: u, source_column: '*' }));
  const order = builtColumns?.length ? [...builtColumns] : ['*'];
  const columns: Record<string, ColumnSource[]> = {};
  const kinds: Record<string, 'computed'> = {};
  for (const name of order) {
    columns[name] = sources();
    kinds[name] = 'computed';
  }
  return {
    // Not complete: a downstream `SELECT *` over it takes the built relation's columns, not these.
    result: { columns, kinds, order, relations: [...model.depends_on], complete: false },
    lineage: {
      model: model.full_name,
      columns,
      kinds,
      depends_on: [...model.depends_on],
      method: 'not_analysed',
      ...(model.referencesKnown === false ? { reads_known: false } : {}),
    },
  };
}
