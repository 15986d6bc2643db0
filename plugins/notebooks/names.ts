/** Names across cells: one rule, kept in the sdk so that `dp promote` inlines referenced cells the same way. */
export { referencedCells, stripTrailingSemicolons, withReferences, type NamedCell } from '../../sdk/index.js';
