/**
 * The rewritten SQL without a json_deserialize_sql round trip: DuckDB reports where each table
 * reference starts (`query_location`, a byte offset into the UTF-8 text), so the rewrite can
 * replace the text of each masked reference in place:
 *
 *   FROM crm . "Customers" c   →   FROM (SELECT * REPLACE (<masks>) FROM crm . "Customers") c
 *
 * The end of a reference is found with a small lexer for dotted names (quoted or unquoted
 * parts, whitespace and comments between them), and the parts it reads must equal the names
 * DuckDB parsed. Anything unexpected (no location, a mismatch, a sample or AT clause, a
 * reference that is not a plain FROM item, two scans at one place) gives null, and the caller
 * uses the json_deserialize_sql path instead. The result is not trusted on its own: the kernel
 * parses and validates the final text, and the enforcer checks that parse (rewrite.ts
 * findUnmaskedScan).
 */
import { quoteIdent, type SqlNode } from '../../sdk/index.js';
import type { PlannedWrap } from './rewrite.js';

export interface NamePart {
  name: string;
  quoted: boolean;
}

/** The keys DuckDB writes for a BASE_TABLE; a reference with anything else set is not spliced. */
export const BASE_TABLE_KEYS = new Set(['type', 'alias', 'sample', 'query_location', 'schema_name', 'table_name', 'column_name_alias', 'catalog_name', 'at_clause']);

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0b || c === 0x0c;
const isIdentStart = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c >= 0x80;
const isIdentCont = (c: number) => isIdentStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x24;

/** Index after whitespace and comments (`-- …` to the end of the line, nested `/* … *\/`); null for an unterminated comment. */
function skipTrivia(buf: Buffer, from: number): number | null {
  let i = from;
  for (;;) {
    const c = buf[i];
    if (isSpace(c)) {
      i++;
    } else if (c === 0x2d && buf[i + 1] === 0x2d) {
      while (i < buf.length && buf[i] !== 0x0a && buf[i] !== 0x0d) i++;
    } else if (c === 0x2f && buf[i + 1] === 0x2a) {
      let depth = 1;
      i += 2;
      while (depth > 0) {
        if (i >= buf.length) return null;
        if (buf[i] === 0x2f && buf[i + 1] === 0x2a) {
          depth++;
          i += 2;
        } else if (buf[i] === 0x2a && buf[i + 1] === 0x2f) {
          depth--;
          i += 2;
        } else {
          i++;
        }
      }
    } else {
      return i;
    }
  }
}

/** One identifier at `at`: `"quoted ""x"""` or an unquoted word. */
function lexPart(buf: Buffer, at: number): { part: NamePart; end: number } | null {
  if (buf[at] === 0x22) {
    const bytes: number[] = [];
    let i = at + 1;
    for (;;) {
      if (i >= buf.length) return null;
      if (buf[i] === 0x22) {
        if (buf[i + 1] === 0x22) {
          bytes.push(0x22);
          i += 2;
          continue;
        }
        break;
      }
      bytes.push(buf[i++]);
    }
    if (!bytes.length) return null;
    return { part: { name: Buffer.from(bytes).toString('utf8'), quoted: true }, end: i + 1 };
  }
  if (!isIdentStart(buf[at])) return null;
  let i = at + 1;
  while (i < buf.length && isIdentCont(buf[i])) i++;
  return { part: { name: buf.toString('utf8', at, i), quoted: false }, end: i };
}

/**
 * The dotted name starting at byte `start` (`a`, `a.b`, `a . "b"`, `a/*x*\/.b`): its parts and
 * the byte just after its last part. Null when the text there is not a name of 1 to 3 parts.
 */
export function lexTableName(buf: Buffer, start: number): { parts: NamePart[]; end: number } | null {
  const parts: NamePart[] = [];
  let at = start;
  for (;;) {
    const lexed = lexPart(buf, at);
    if (!lexed) return null;
    parts.push(lexed.part);
    if (parts.length > 3) return null;
    const next = skipTrivia(buf, lexed.end);
    if (next === null) return null;
    if (buf[next] !== 0x2e) return { parts, end: lexed.end };
    const after = skipTrivia(buf, next + 1);
    if (after === null) return null;
    at = after;
  }
}

/** Whether lexed parts spell the catalog/schema/table DuckDB parsed (unquoted parts case-insensitively). */
export function namesMatch(parts: NamePart[], node: SqlNode): boolean {
  const expected = [node.catalog_name, node.schema_name, node.table_name].map((v) => String(v ?? '')).filter((v) => v !== '');
  if (node.catalog_name && !node.schema_name) return false;
  if (parts.length !== expected.length) return false;
  return parts.every((p, i) => (p.quoted ? p.name === expected[i] : p.name.toLowerCase() === expected[i].toLowerCase()));
}

/** Whether a scan can be spliced at all, judged from its node alone. */
function spliceable(node: SqlNode): boolean {
  for (const [k, v] of Object.entries(node)) if (!BASE_TABLE_KEYS.has(k) && v != null) return false;
  if (node.sample != null || node.at_clause != null) return false;
  return Number.isSafeInteger(node.query_location) && node.query_location >= 0;
}

/**
 * The original SQL with every planned wrap spliced in, or null when any of them cannot be
 * (the caller then deparses a rewritten tree). `replaceSql(wrap)` is the REPLACE list text.
 */
export function spliceRewrite(sql: string, wraps: PlannedWrap[], replaceSql: (wrap: PlannedWrap) => string): string | null {
  const buf = Buffer.from(sql, 'utf8');
  const edits: TextEdit[] = [];
  for (const wrap of wraps) {
    const { node, fromItem } = wrap.scan;
    if (!fromItem || !spliceable(node)) return null;
    const start = node.query_location as number;
    if (start >= buf.length) return null;
    const name = lexTableName(buf, start);
    if (!name || !namesMatch(name.parts, node)) return null;
    // An aliased reference keeps its alias (and column aliases) in the text after the name.
    const alias = node.alias ? '' : ` AS ${quoteIdent(String(node.table_name))}`;
    edits.push({ start, end: name.end, text: `(SELECT * REPLACE (${replaceSql(wrap)}) FROM ${buf.toString('utf8', start, name.end)})${alias}` });
  }
  return applyEdits(buf, edits);
}

/** A byte range of the SQL text and what replaces it. */
export interface TextEdit {
  start: number;
  end: number;
  text: string;
}

/** The text with every edit applied, or null when two edits overlap. */
export function applyEdits(buf: Buffer, edits: TextEdit[]): string | null {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  const pieces: Buffer[] = [];
  let pos = 0;
  for (const e of sorted) {
    if (e.start < pos) return null;
    pieces.push(buf.subarray(pos, e.start), Buffer.from(e.text, 'utf8'));
    pos = e.end;
  }
  pieces.push(buf.subarray(pos));
  return Buffer.concat(pieces).toString('utf8');
}
