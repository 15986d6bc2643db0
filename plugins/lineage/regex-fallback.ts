/**
 * Regex-based column lineage, used only when DuckDB's parser rejects a model's SQL
 * (templating, a syntax error, a dialect DuckDB does not speak). It reads the outermost
 * select list and FROM/JOIN clauses textually, so it is approximate: qualified references
 * resolve through table aliases, bare references go to the only table (or the first one),
 * and CTEs are not traced through. Responses built from it say `method: "regex"`.
 */
import type { ColumnSource } from '../../sdk/index.js';
import { STAR, type ColumnLineageResult } from './columns.js';

const KEYWORDS = new Set(
  (
    'select from where group by order having limit offset as on and or not null is in case when then else end ' +
    'distinct all any some exists between like ilike similar true false interval cast try_cast over partition ' +
    'rows range preceding following unbounded current row filter within asc desc nulls first last join left right ' +
    'full inner outer cross natural using union except intersect with recursive qualify window lateral ' +
    'date time timestamp timestamptz varchar text integer int bigint smallint tinyint hugeint double float real ' +
    'decimal numeric boolean bool blob uuid json interval year month day hour minute second'
  ).split(' '),
);

const IDENT = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;

function unquote(id: string): string {
  return id.startsWith('"') ? id.slice(1, -1).replace(/""/g, '"') : id;
}

/** Removes comments and string literals (they could hold anything). */
function scrub(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''");
}

/** Splits on a separator at parenthesis depth 0. */
function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === separator && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

/** Index of the first match of `re` at parenthesis depth 0 at or after `from`. */
function topLevelIndex(text: string, re: RegExp, from = 0): { index: number; length: number } | null {
  const depthAt: number[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    depthAt.push(depth);
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
  }
  const global = new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g');
  global.lastIndex = from;
  for (let m = global.exec(text); m; m = global.exec(text)) {
    if (depthAt[m.index] === 0) return { index: m.index, length: m[0].length };
  }
  return null;
}

export function regexLineage(sql: string, dependsOn: string[]): ColumnLineageResult {
  const text = scrub(sql);
  const cteNames = new Set<string>();
  for (const m of text.matchAll(new RegExp(String.raw`(?:\bWITH(?:\s+RECURSIVE)?|,)\s*(${IDENT})\s*(?:\([^)]*\))?\s+AS\s*\(`, 'gi'))) cteNames.add(unquote(m[1]!).toLowerCase());

  const resolve = (name: string): string => {
    if (name.includes('.')) return name;
    const hits = dependsOn.filter((d) => d.slice(d.lastIndexOf('.') + 1).toLowerCase() === name.toLowerCase());
    return hits.length === 1 ? hits[0]! : `main.${name}`;
  };

  // Tables and their aliases from FROM / JOIN clauses anywhere in the text.
  const aliases = new Map<string, string>();
  const tables: string[] = [];
  const tableRe = new RegExp(String.raw`\b(?:FROM|JOIN)\s+(${IDENT}(?:\s*\.\s*${IDENT}){0,2})(?:\s+(?:AS\s+)?(${IDENT}))?`, 'gi');
  for (const m of text.matchAll(tableRe)) {
    const parts = m[1]!.split(/\s*\.\s*/).map(unquote);
    const bare = parts[parts.length - 1]!;
    if (parts.length === 1 && cteNames.has(bare.toLowerCase())) continue;
    const table = resolve(parts.slice(-2).join('.'));
    if (!tables.includes(table)) tables.push(table);
    aliases.set(bare.toLowerCase(), table);
    const alias = m[2] ? unquote(m[2]) : null;
    if (alias && !KEYWORDS.has(alias.toLowerCase())) aliases.set(alias.toLowerCase(), table);
  }
  const fallbackTable = tables[0] ?? dependsOn[0] ?? '';

  // The outermost select list: after the CTEs (inside parentheses), up to its FROM.
  const select = topLevelIndex(text, /\bSELECT\b/i);
  const columns: Record<string, ColumnSource[]> = {};
  const order: string[] = [];
  if (select) {
    const bodyStart = select.index + select.length;
    const from = topLevelIndex(text, /\bFROM\b/i, bodyStart);
    const list = text.slice(bodyStart, from ? from.index : undefined).replace(/^\s*DISTINCT\b/i, '');
    for (const item of splitTopLevel(list, ',')) {
      const { name, expression } = nameOf(item);
      const sources = sourcesOf(expression, aliases, fallbackTable);
      let unique = name;
      for (let i = 1; unique !== STAR && unique in columns; i++) unique = `${name}_${i}`;
      if (unique in columns) sources.forEach((s) => columns[unique]!.push(s));
      else {
        columns[unique] = sources;
        order.push(unique);
      }
    }
  }
  // The text alone cannot tell a reference from a computation: every column counts as computed.
  const kinds = Object.fromEntries(order.map((c) => [c, 'computed' as const]));
  return { columns, kinds, order, relations: tables, complete: !(STAR in columns) };
}

function nameOf(item: string): { name: string; expression: string } {
  const star = new RegExp(String.raw`^(?:(${IDENT})\s*\.\s*)?\*`).exec(item);
  if (star) return { name: STAR, expression: item };
  const as = new RegExp(String.raw`^([\s\S]*?)\s+AS\s+(${IDENT})\s*$`, 'i').exec(item);
  if (as) return { name: unquote(as[2]!), expression: as[1]! };
  const implicit = new RegExp(String.raw`^([\s\S]*[\w)"'])\s+(${IDENT})\s*$`).exec(item);
  if (implicit && !KEYWORDS.has(implicit[2]!.toLowerCase())) return { name: unquote(implicit[2]!), expression: implicit[1]! };
  const ref = new RegExp(String.raw`^(?:${IDENT}\s*\.\s*)*(${IDENT})$`).exec(item.trim());
  if (ref) return { name: unquote(ref[1]!), expression: item };
  return { name: item.replace(/\s+/g, ' ').trim(), expression: item };
}

function sourcesOf(expression: string, aliases: Map<string, string>, fallbackTable: string): ColumnSource[] {
  const out: ColumnSource[] = [];
  const add = (table: string, column: string) => {
    if (table && !out.some((s) => s.source_table === table && s.source_column === column)) out.push({ source_table: table, source_column: column });
  };
  const star = new RegExp(String.raw`^(?:(${IDENT})\s*\.\s*)?\*`).exec(expression.trim());
  if (star) {
    add(star[1] ? (aliases.get(unquote(star[1]).toLowerCase()) ?? fallbackTable) : fallbackTable, STAR);
    return out;
  }
  // Type names in casts are not columns.
  const cleaned = expression
    .replace(/::\s*[A-Za-z_]\w*(?:\s*\([\d\s,]*\))?(?:\[\])?/g, ' ')
    .replace(/\bAS\s+[A-Za-z_]\w*(?:\s*\([\d\s,]*\))?/gi, ' ');
  const refRe = new RegExp(String.raw`(${IDENT})(?:\s*\.\s*(${IDENT}))?(\s*\()?`, 'g');
  for (const m of cleaned.matchAll(refRe)) {
    if (m[3]) continue; // a function call
    const first = unquote(m[1]!);
    const before = cleaned.slice(0, m.index).trimEnd();
    if (/[\d.]$/.test(before) && /^\d/.test(m[0])) continue;
    if (m[2]) {
      const table = aliases.get(first.toLowerCase());
      add(table ?? fallbackTable, table ? unquote(m[2]) : first);
    } else if (!KEYWORDS.has(first.toLowerCase()) && !/^\d/.test(first)) {
      add(fallbackTable, first);
    }
  }
  return out;
}
