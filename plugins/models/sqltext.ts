/**
 * A SQL *lexer* (not a parser): it only tells strings, quoted identifiers, comments, words and
 * punctuation apart, with line numbers. Lint rules that are about text (keyword case, trailing
 * whitespace) and the trailing-semicolon trim need that; everything structural goes through
 * DuckDB's own parser (json_serialize_sql).
 */
export type TokenKind = 'word' | 'quoted_ident' | 'string' | 'number' | 'comment' | 'whitespace' | 'punct';

export interface Token {
  kind: TokenKind;
  text: string;
  /** Offset in the source text. */
  start: number;
  /** 1-based line of the token's first character. */
  line: number;
}

export function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  const push = (kind: TokenKind, end: number) => {
    const text = sql.slice(i, end);
    tokens.push({ kind, text, start: i, line });
    for (const ch of text) if (ch === '\n') line++;
    i = end;
  };
  const until = (closer: string, from: number, doubled: boolean): number => {
    let j = from;
    while (j < sql.length) {
      if (sql[j] === closer) {
        if (doubled && sql[j + 1] === closer) {
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
    return sql.length;
  };
  while (i < sql.length) {
    const ch = sql[i];
    const next = sql[i + 1];
    if (/\s/.test(ch)) {
      let j = i + 1;
      while (j < sql.length && /\s/.test(sql[j])) j++;
      push('whitespace', j);
    } else if (ch === '-' && next === '-') {
      const nl = sql.indexOf('\n', i);
      push('comment', nl === -1 ? sql.length : nl);
    } else if (ch === '/' && next === '*') {
      const close = sql.indexOf('*/', i + 2);
      push('comment', close === -1 ? sql.length : close + 2);
    } else if (ch === "'") {
      push('string', until("'", i + 1, true));
    } else if (ch === '$' && next === '$') {
      const close = sql.indexOf('$$', i + 2);
      push('string', close === -1 ? sql.length : close + 2);
    } else if (ch === '"') {
      push('quoted_ident', until('"', i + 1, true));
    } else if (/[A-Za-z_]/.test(ch)) {
      let j = i + 1;
      while (j < sql.length && /[A-Za-z0-9_$]/.test(sql[j])) j++;
      push('word', j);
    } else if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(next ?? ''))) {
      let j = i + 1;
      while (j < sql.length && /[0-9._eE]/.test(sql[j])) j++;
      push('number', j);
    } else {
      push('punct', i + 1);
    }
  }
  return tokens;
}

/** 1-based line number of a character offset. */
export function lineAt(sql: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < sql.length; i++) if (sql[i] === '\n') line++;
  return line;
}

/**
 * The statement text to embed in CREATE ... AS: the source without its final `;` (a trailing
 * semicolon would end the CREATE early). Comments after it stay, on their own lines.
 */
export function statementBody(sql: string): string {
  const trimmed = sql.trimEnd();
  // Most files end in their query: no `;`, no comment on the last line (lexing 10,000 files costs).
  if (!trimmed.endsWith(';') && !trimmed.endsWith('*/') && !/--[^\n]*$/.test(trimmed)) return trimmed;
  const tokens = tokenize(sql);
  for (let k = tokens.length - 1; k >= 0; k--) {
    const t = tokens[k];
    if (t.kind === 'whitespace' || t.kind === 'comment') continue;
    if (t.kind === 'punct' && t.text === ';') return (sql.slice(0, t.start) + sql.slice(t.start + 1)).trimEnd();
    break;
  }
  return sql.trimEnd();
}

/** The stand-in value given to a PIVOT without an IN list so that DuckDB's parser can serialize it. */
export const PIVOT_STAND_IN = '__dp_pivot_value';

/**
 * DuckDB's simplified `PIVOT t ON col USING agg(x)` (without `IN (...)`) finds its output columns
 * by reading the data first, so json_serialize_sql refuses it ("only SELECT statements"); with an
 * IN list the same statement serializes as a SELECT over a PIVOT table reference. This returns
 * the text with a stand-in IN list after every ON expression that lacks one (for analysis only:
 * dependencies, lineage, lint; the model is built from its own text), or null when the text has
 * no such PIVOT.
 */
export function pivotAnalysisForm(sql: string): string | null {
  const tokens = tokenize(sql).filter((t) => t.kind !== 'whitespace' && t.kind !== 'comment');
  const depthAt: number[] = [];
  let depth = 0;
  for (const t of tokens) {
    if (t.kind === 'punct' && t.text === '(') depth++;
    depthAt.push(depth);
    if (t.kind === 'punct' && t.text === ')') depth--;
  }
  const word = (i: number) => (tokens[i]?.kind === 'word' ? tokens[i].text.toLowerCase() : '');
  const inserts: number[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (word(i) !== 'pivot' && word(i) !== 'pivot_wider') continue;
    const d = depthAt[i];
    // The SQL-standard `FROM t PIVOT (agg FOR col IN (...))` already names its values.
    const next = tokens[i + 1];
    if (next?.text === '(' && !['select', 'from', 'with', 'values', 'pivot', 'unpivot'].includes(word(i + 2))) continue;
    let on = -1;
    for (let j = i + 1; j < tokens.length && depthAt[j] >= d; j++) {
      if (depthAt[j] === d && tokens[j].text === ')' ) break;
      if (depthAt[j] === d && word(j) === 'on') {
        on = j;
        break;
      }
    }
    if (on < 0) continue;
    const ends = new Set(['using', 'group', 'order', 'limit']);
    let itemHasIn = false;
    let j = on + 1;
    for (; j < tokens.length; j++) {
      const t = tokens[j];
      const closes = t.kind === 'punct' && t.text === ')' && depthAt[j] === d;
      const atLevel = depthAt[j] === d && !(t.kind === 'punct' && t.text === '(');
      if (closes || (atLevel && (ends.has(word(j)) || t.text === ';'))) break;
      if (atLevel && t.kind === 'punct' && t.text === ',') {
        if (!itemHasIn) inserts.push(tokens[j].start);
        itemHasIn = false;
        continue;
      }
      if (atLevel && word(j) === 'in') itemHasIn = true;
    }
    if (!itemHasIn) {
      const last = tokens[j - 1];
      inserts.push(last.start + last.text.length);
    }
  }
  if (inserts.length === 0) return null;
  let out = sql;
  for (const at of inserts.sort((a, b) => b - a)) out = `${out.slice(0, at)} IN ('${PIVOT_STAND_IN}')${out.slice(at)}`;
  return out;
}
