/**
 * Names across notebook cells, one rule for interactive sessions, pipeline runs and `dp promote`: a sql cell with an
 * `id` is a table expression later sql cells select from by that id. The cell runs as
 * `WITH <id> AS (<that cell's SQL>) <the cell>` with only the ids it names (whole words,
 * case-insensitive, as SQL identifiers are), and the ids those cells name in turn, in cell order;
 * a cell that starts its own WITH gets them prepended to its list. Applied to read-only
 * statements only: a statement that writes runs as written.
 */

/** A cell's text: a string, or a list of lines joined. */
function cellSource(source: string | string[]): string {
  return Array.isArray(source) ? source.join('') : source;
}

export interface NamedCell {
  type: string;
  source: string | string[];
  id?: string;
}

export function stripTrailingSemicolons(sql: string): string {
  return sql.replace(/[\s;]+$/, '');
}

/** Indexes of the earlier sql cells `cells[index]` names (directly or through them), in cell order. */
export function referencedCells(cells: NamedCell[], index: number): number[] {
  const named = new Map<string, number>();
  cells.forEach((c, i) => {
    if (i < index && c.type === 'sql' && c.id) named.set(c.id.toLowerCase(), i);
  });
  if (named.size === 0) return [];
  const found = new Set<number>();
  const visit = (text: string, before: number) => {
    for (const word of new Set((text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []).map((w) => w.toLowerCase()))) {
      const i = named.get(word);
      if (i === undefined || i >= before || found.has(i)) continue;
      found.add(i);
      visit(cellSource(cells[i].source), i);
    }
  };
  visit(cellSource(cells[index].source), index);
  return [...found].sort((a, b) => a - b);
}

/** The cell's SQL with the earlier cells it names as table expressions, and how many lines were added before its own. */
export function withReferences(cells: NamedCell[], index: number): { sql: string; addedLines: number; references: number } {
  const own = stripTrailingSemicolons(cellSource(cells[index].source));
  const refs = referencedCells(cells, index);
  if (refs.length === 0) return { sql: own, addedLines: 0, references: 0 };
  const ctes = refs.map((i) => `${cells[i].id} AS (\n${stripTrailingSemicolons(cellSource(cells[i].source))}\n)`).join(',\n');
  // A cell that starts its own WITH continues the list (RECURSIVE moves to the front).
  const head = /^((?:\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*)WITH(\s+RECURSIVE)?\s/i.exec(own);
  const prefix = head ? `WITH${head[2] ? ' RECURSIVE' : ''} ${ctes},\n` : `WITH ${ctes}\n`;
  const body = head ? own.slice(head[0].length) : own;
  const addedLines = prefix.split('\n').length - 1 - (head ? head[0].split('\n').length - 1 : 0);
  return { sql: prefix + body, addedLines, references: refs.length };
}
