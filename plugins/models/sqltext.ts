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
  const tokens = tokenize(sql);
  for (let k = tokens.length - 1; k >= 0; k--) {
    const t = tokens[k];
    if (t.kind === 'whitespace' || t.kind === 'comment') continue;
    if (t.kind === 'punct' && t.text === ';') return (sql.slice(0, t.start) + sql.slice(t.start + 1)).trimEnd();
    break;
  }
  return sql.trimEnd();
}
