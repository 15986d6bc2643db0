/**
 * Whether SQL that runs through the database port can change the catalog or the data, decided
 * from its leading keyword so the check costs a regex, not a round trip to DuckDB (a bench in
 * bench/database.bench.ts measures it). Text the keyword cannot settle (`WITH` that names a
 * mutation, `EXPLAIN ANALYZE`, several statements) is `unsure`: the caller asks DuckDB's
 * parser for the statement types. Anything unknown counts as a write: a false alarm only
 * makes a listener (masking) re-read the catalog, a missed write would leave it stale.
 */
export type StatementKind = 'read' | 'write' | 'neutral' | 'unsure';

/** Statements that only read. */
const READS = new Set(['SELECT', 'FROM', 'VALUES', 'TABLE', 'SHOW', 'DESCRIBE', 'DESC', 'SUMMARIZE']);
/** Statements that neither read user data nor change the catalog or data: transaction control, settings, checkpoints. */
const NEUTRAL = new Set(['BEGIN', 'START', 'COMMIT', 'END', 'ROLLBACK', 'ABORT', 'SET', 'RESET', 'CHECKPOINT', 'FORCE', 'USE', 'LOAD', 'DEALLOCATE']);
const MUTATION_WORD = /\b(INSERT|UPDATE|DELETE|MERGE|COPY|CREATE|DROP|ALTER)\b/i;
/** Leading whitespace, comments and opening parentheses, then the first word. */
const LEADING_WORD = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/|\()*([A-Za-z]+)/;

export function statementKind(sql: string): StatementKind {
  const m = LEADING_WORD.exec(sql);
  if (!m) return 'unsure';
  const word = m[1].toUpperCase();
  // A batch that starts with a write is a write, whatever follows.
  if (!READS.has(word) && !NEUTRAL.has(word) && word !== 'WITH' && word !== 'EXPLAIN') return 'write';
  // One statement, perhaps with a trailing semicolon; anything after a semicolon needs the parser.
  const semicolon = sql.indexOf(';');
  const single = semicolon < 0 || /^[\s;]*$/.test(sql.slice(semicolon));
  if (!single) return 'unsure';
  if (READS.has(word)) return 'read';
  if (NEUTRAL.has(word)) return 'neutral';
  if (word === 'WITH') return MUTATION_WORD.test(sql) ? 'unsure' : 'read';
  return /\bEXPLAIN\s+ANALY[SZ]E\b/i.test(sql) ? 'write' : 'read';
}

/** DuckDB statement types (the C API's duckdb_statement_type) that change nothing. */
export const READ_STATEMENT_TYPES = new Set([1 /* SELECT */]);
export const NEUTRAL_STATEMENT_TYPES = new Set([10 /* TRANSACTION */, 13 /* VARIABLE_SET */, 20 /* SET */, 21 /* LOAD */]);

/** The first keyword, upper-cased ('' when there is none): names the statement in events. */
export function leadingKeyword(sql: string): string {
  return LEADING_WORD.exec(sql)?.[1].toUpperCase() ?? '';
}
