/**
 * Masking at the result: in a plain SELECT of one table, or of tables joined with every column
 * reference naming its table, where every masked column is read only as a whole item of the
 * select list and no other part of the statement reads it,
 *
 *   SELECT id, email, phone FROM crm.customers WHERE id < 20 ORDER BY id
 *   SELECT c.email, o.amount FROM crm.customers c JOIN crm.orders o ON o.customer_id = c.id
 *
 * each masked result column holds exactly the column's values, row for row: no filter, sort,
 * grouping, DISTINCT, window or join condition sees them. Masking those values after execution with the
 * method's JavaScript twin then gives the very result the SQL mask gives, while DuckDB runs the
 * statement as sent. That matters because DuckDB pays for a mask per execution, whatever the
 * row count: every regular expression is compiled when the query starts and every function
 * node is set up (about 100 µs of engine CPU per phone, card, ip or initials mask, measured),
 * which for a page of 20 rows is most of the query's cost.
 *
 * Only where the twin is exact: built-in methods whose JavaScript equals the SQL for every text
 * (test/plugins/masking/result-masking.test.ts checks each on the same corpus), on VARCHAR
 * columns, unconditional policies. Anything else (a keyed or numeric method, a condition
 * column, a method from another plugin, any other statement shape) goes to the SQL rewrite.
 * Only for the kernel's own runs (`QueryContext.runsRowTransforms`): a caller of `prepare()`
 * runs the text itself and never applies row transforms.
 *
 * The final check parses the text that runs (the runner's page appended) and plans it again:
 * it must mask the same columns at the same positions, or the query is refused.
 */
import { DpError, type Logger, type SqlNode } from '../../sdk/index.js';
import type { MethodCatalog } from './catalog.js';
import { type Bound, bindTables, EMPTY, lower, opaque, type ResolveSource, scan, shapeOf } from './late.js';
import type { ColumnMask } from './rewrite.js';

/** Built-in methods whose JavaScript twin gives what their SQL gives for every VARCHAR value. */
export const EXACT_TWINS = new Set(['hash', 'redact', 'null', 'partial', 'truncate', 'email', 'phone', 'credit_card', 'first_initial', 'ip_address']);

/** One masked item of the select list: its position (= the result column's) and its mask. */
export interface ResultItem {
  index: number;
  mask: ColumnMask;
}

export interface ResultPlan {
  items: ResultItem[];
  /** Items in the select list (= result columns: the statement has no star). */
  width: number;
}

/** Whether a FROM tree joins on USING (a join condition on columns named without their table). */
function joinsUsing(ref: SqlNode | undefined): boolean {
  if (ref?.type !== 'JOIN') return false;
  return !EMPTY(ref.using_columns) || joinsUsing(ref.left) || joinsUsing(ref.right);
}

/** Modifiers that neither merge rows nor look at values beyond the ones they name. */
const PLAIN_MODIFIERS = new Set(['ORDER_MODIFIER', 'LIMIT_MODIFIER', 'LIMIT_PERCENT_MODIFIER']);

/**
 * The result plan of a statement, or null when it does not have the shape or a masked item's
 * mask cannot be applied at the result (`exact` says which can).
 */
export function planResultMasking(statements: unknown, resolve: ResolveSource, exact: (mask: ColumnMask) => boolean): ResultPlan | null {
  const shape = shapeOf(statements);
  if (!shape || joinsUsing(shape.node.from_table)) return null;
  const node = shape.node;
  if (node.aggregate_handling !== 'STANDARD_HANDLING' || !EMPTY(node.group_expressions) || !EMPTY(node.group_sets) || node.having != null || node.qualify != null) return null;
  for (const m of (node.modifiers ?? []) as SqlNode[]) {
    if (!PLAIN_MODIFIERS.has(String(m.type))) return null;
    // ORDER BY 2 sorts by a select item, possibly a masked one, before it is masked.
    if (m.type === 'ORDER_MODIFIER' && ((m.orders ?? []) as SqlNode[]).some((o) => o?.expression?.class === 'CONSTANT')) return null;
  }
  const tables = bindTables(shape, resolve);
  if (!tables) return null;
  const only = tables.size === 1 ? [...tables.values()][0] : undefined;
  /**
   * The table and lower-case column a reference names when it is a plain column of a table of
   * the FROM tree (`t.col`, or `col` when there is one table), else null.
   */
  const columnOf = (n: SqlNode): { table: Bound; column: string } | null => {
    const names = n.column_names;
    if (!Array.isArray(names) || names.length < 1 || names.length > 2) return null;
    const table = names.length === 2 ? tables.get(lower(names[0])) : only;
    const column = lower(names[names.length - 1]);
    return table?.source.columns.has(column) ? { table, column } : null;
  };

  const selectList = (Array.isArray(node.select_list) ? node.select_list : []) as SqlNode[];
  const items: ResultItem[] = [];
  const itemNodes = new Set<unknown>();
  for (const [index, item] of selectList.entries()) {
    if (item?.class !== 'COLUMN_REF') continue;
    const ref = columnOf(item);
    const mask = ref?.table.masks.get(ref.column);
    if (!mask) continue;
    if (!exact(mask)) return null;
    items.push({ index, mask });
    itemNodes.add(item);
  }
  // Every other reference must be an unmasked column of a table of the FROM tree: no alias (which
  // could name a masked item), no row reference, nothing the masks did not plan.
  const problem = scan(shape, (n) => {
    if (itemNodes.has(n)) return false;
    const why = opaque(n);
    if (why) return why;
    if (n.class !== 'COLUMN_REF') return true;
    const ref = columnOf(n);
    if (ref === null) return 'a reference that is not a column of a table';
    return ref.table.masks.has(ref.column) ? `${ref.column} is read outside the select list` : true;
  });
  return problem === null ? { items, width: selectList.length } : null;
}

/** The first difference between the plan made for the SQL as sent and the plan of the text that runs, or null. */
export function resultPlanMismatch(planned: ResultPlan, final: ResultPlan | null): string | null {
  if (!final) return 'the statement that runs cannot be masked at the result';
  if (final.width !== planned.width || final.items.length !== planned.items.length) return 'the statement that runs selects other columns';
  for (const [i, item] of planned.items.entries()) {
    const other = final.items[i];
    if (other.index !== item.index || lower(other.mask.column) !== lower(item.mask.column) || other.mask.policy?.id !== item.mask.policy?.id) {
      return `the statement that runs does not select ${item.mask.column} at position ${item.index + 1}`;
    }
  }
  return null;
}

/** The keyed methods (keys.ts): on a warehouse target they mask at the result only (exactTwin). */
const KEYED_METHODS = new Set(['consistent_hash', 'noise', 'date_shift']);

/** Which masks the kernel applies at the result, and the row transform that applies them. */
export class ResultMasker {
  constructor(
    private readonly catalog: MethodCatalog,
    private readonly log: Logger,
  ) {}

  /**
   * Whether a mask can be applied to result values by its JavaScript twin, exactly as its SQL would.
   * On a warehouse target a keyed mask is applied only so: the target returns the raw column to this process alone and
   * the twin computes the same HMAC under the same key here, so the key never reaches the target (docs/security.md).
   */
  exactTwin(mask: ColumnMask, onTarget: boolean): boolean {
    const p = mask.policy;
    if (!p || p.condition_column || !this.catalog.builtin(p.method)) return false;
    if (onTarget && KEYED_METHODS.has(p.method)) return true;
    return EXACT_TWINS.has(p.method) && mask.type === 'VARCHAR';
  }

  /** The row transform of a result plan: each masked item's values through its method's twin. */
  resultMasker(plan: ResultPlan): (columns: string[], rows: unknown[][]) => unknown[][] {
    // Each item's twin and what it accepts, resolved once per plan, not per value.
    const masks = plan.items.map(({ index, mask }) => {
      const { method, method_config } = mask.policy!;
      // A keyed mask on a target may take numbers (noise); every other twin, text only.
      return { index, twin: this.catalog.twin(method, method_config, { type: mask.type }), takesNumbers: KEYED_METHODS.has(method) };
    });
    const refuse = (problem: string) => {
      this.log.error(`masking: the result does not match its plan (${problem}); the query was refused`);
      return new DpError(500, 'masking_unverified', `Masking could not confirm its plan for this result (${problem}), so it was not returned`);
    };
    return (columns, rows) => {
      if (columns.length !== plan.width) throw refuse(`${columns.length} columns where the statement selects ${plan.width}`);
      for (const row of rows) {
        for (const m of masks) {
          const value = row[m.index];
          if (value !== null && typeof value !== 'string' && !(m.takesNumbers && typeof value === 'number')) throw refuse(`a value of ${columns[m.index]} is not text`);
          row[m.index] = m.twin(value);
        }
      }
      return rows;
    };
  }
}
