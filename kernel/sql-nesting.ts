/**
 * The nesting a query gives the engine, checked on DuckDB's parse tree before it binds (issue 38
 * point 1; sdk/nesting.ts says why): nested list/struct/map constructors, nested CAST target
 * types, and the JSON structure json_transform and from_json turn into a type while binding.
 */
import { badRequest } from '../sdk/errors.js';
import { jsonNestingDepth, MAX_NESTING_DEPTH, nestingTooDeep } from '../sdk/nesting.js';

/** Functions that build a nested value from their arguments (`[…]` is list_value, `{…}` struct_pack). */
const CONSTRUCTORS = new Set(['list_value', 'list_pack', 'array_value', 'struct_pack', 'row', 'map', 'map_from_entries', 'union_value']);
/** Functions whose second argument is a JSON structure DuckDB turns into a type while binding, recursively. */
const JSON_STRUCTURE_FUNCTIONS = new Set(['json_transform', 'json_transform_strict', 'from_json', 'from_json_strict']);
/** Type ids that nest another type. */
const NESTED_TYPES = new Set(['LIST', 'ARRAY', 'STRUCT', 'MAP', 'UNION']);

/** How many nested types a serialized type holds (INTEGER[][] → 2). */
function typeDepth(type: unknown): number {
  if (!type || typeof type !== 'object') return 0;
  let deepest = 0;
  for (const v of Object.values(type)) if (v && typeof v === 'object') deepest = Math.max(deepest, typeDepth(v));
  return deepest + (NESTED_TYPES.has((type as { id?: unknown }).id as string) ? 1 : 0);
}

/** The text of a string literal (possibly cast, `'…'::JSON`), or null when the node is anything else. */
function literalText(node: Record<string, any> | undefined): string | null {
  if (node?.class === 'CAST') return literalText(node.child);
  if (node?.class === 'CONSTANT' && node.value && !node.value.is_null && typeof node.value.value === 'string') return node.value.value;
  return null;
}

function checkStructure(fn: Record<string, any>, name: string): void {
  const structure = literalText(fn.children?.[1]);
  if (structure === null) {
    throw badRequest('json_structure_not_literal', `The structure given to ${name} must be a string literal, so its nesting can be checked before the engine reads it`, { function: name });
  }
  const depth = jsonNestingDepth(structure);
  if (depth > MAX_NESTING_DEPTH) throw nestingTooDeep(`The JSON structure given to ${name}`, depth);
}

/**
 * Throws 400 `nesting_too_deep` (or `json_structure_not_literal`) when a parse tree would hand the
 * engine a value or type nested deeper than MAX_NESTING_DEPTH. The tree itself is at most
 * DuckDB's max_expression_depth (1000) deep, so the walk's recursion stays small.
 */
export function assertSqlNesting(root: unknown): void {
  const visit = (value: unknown, constructors: number): void => {
    if (Array.isArray(value)) {
      for (const v of value) visit(v, constructors);
      return;
    }
    if (!value || typeof value !== 'object') return;
    const node = value as Record<string, any>;
    let depth = constructors;
    if (node.class === 'FUNCTION' && typeof node.function_name === 'string') {
      const name = node.function_name.toLowerCase();
      if (CONSTRUCTORS.has(name) && ++depth > MAX_NESTING_DEPTH) throw nestingTooDeep('A value built in the query', depth);
      if (JSON_STRUCTURE_FUNCTIONS.has(name)) checkStructure(node, name);
    }
    if (node.cast_type) {
      const d = typeDepth(node.cast_type);
      if (d > MAX_NESTING_DEPTH) throw nestingTooDeep('A type in the query', d);
    }
    for (const [key, child] of Object.entries(node)) if (key !== 'cast_type' && child && typeof child === 'object') visit(child, depth);
  };
  visit(root, 0);
}
