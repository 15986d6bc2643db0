/**
 * Table references read straight from json_serialize_sql's text, without building the tree.
 *
 * A first discovery of a large project parses every model, and `JSON.parse` of the trees plus the
 * generic walk over them (and the garbage they leave) cost more than DuckDB's parser itself: at
 * 10,000 models about 0.5 s of the main thread for trees whose only use there is the list of
 * tables each query reads. This scanner goes over the text once, allocating only for the few
 * fields it keeps, and answers exactly what `tableReferences(tree)` (sqltree.ts) answers for
 * the same tree: the same BASE_TABLE nodes in the same order, with the same CTE scoping. Where it
 * cannot be sure of that (a value of a shape the walk would read differently, a SHOW reference
 * whose checks need the tree, text that is not well-formed JSON), it answers null and the caller
 * reads the tree.
 */
import type { TableRef } from './sqltree.js';

export interface ScannedReferences {
  /** Entries of the tree's `statements` list. */
  statements: number;
  refs: TableRef[];
}

// Keys the scanner acts on; every other key is OTHER.
const OTHER = 0;
const TYPE = 1;
const TABLE_NAME = 2;
const SCHEMA_NAME = 3;
const CATALOG_NAME = 4;
const QUERY_LOCATION = 5;
const CTE_MAP = 6;
const MAP = 7;
const KEY = 8;
const STATEMENTS = 9;
const NODE = 10;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const COLON = 58;

function keyOf(json: string, start: number, length: number): number {
  const first = json.charCodeAt(start);
  switch (length) {
    case 3:
      return json.startsWith('map', start) ? MAP : json.startsWith('key', start) ? KEY : OTHER;
    case 4:
      return first === 116 && json.startsWith('type', start) ? TYPE : first === 110 && json.startsWith('node', start) ? NODE : OTHER;
    case 7:
      return first === 99 && json.startsWith('cte_map', start) ? CTE_MAP : OTHER;
    case 10:
      return first === 116 && json.startsWith('table_name', start) ? TABLE_NAME : first === 115 && json.startsWith('statements', start) ? STATEMENTS : OTHER;
    case 11:
      return first === 115 && json.startsWith('schema_name', start) ? SCHEMA_NAME : OTHER;
    case 12:
      return first === 99 && json.startsWith('catalog_name', start) ? CATALOG_NAME : OTHER;
    case 14:
      return first === 113 && json.startsWith('query_location', start) ? QUERY_LOCATION : OTHER;
    default:
      return OTHER;
  }
}

/** Index of the quote that closes the string opening at `open`, or -1. */
function stringEnd(json: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const quote = json.indexOf('"', from);
    if (quote < 0) return -1;
    if (json.charCodeAt(quote - 1) !== BACKSLASH) return quote;
    let slashes = 1;
    while (json.charCodeAt(quote - 1 - slashes) === BACKSLASH) slashes++;
    if ((slashes & 1) === 0) return quote;
    from = quote + 1;
  }
}

/** The string value whose opening quote is at `open`, unescaped only when it has escapes. */
function stringAt(json: string, open: number): string {
  const close = stringEnd(json, open);
  const backslash = json.indexOf('\\', open + 1);
  return backslash < 0 || backslash > close ? json.slice(open + 1, close) : (JSON.parse(json.slice(open, close + 1)) as string);
}

/** A `query_location` value as the tree reader gives it: a number, or null (a string, a non-finite number, a literal). */
function locationAt(json: string, start: number, end: number): number | null {
  if (start < 0 || json.charCodeAt(start) === QUOTE) return null;
  const token = json.slice(start, end);
  if (token === 'null' || token === 'true' || token === 'false' || token.endsWith('Infinity') || token === 'NaN') return null;
  const value = Number(token);
  return Number.isNaN(value) ? null : value;
}

/**
 * Per open container, by depth: whether it is an object, where it starts, the key being read;
 * per open object, whether its type is BASE_TABLE, where its name fields' values start, and
 * whether it defines CTEs. Typed and kept across calls: the scan allocates nothing per node.
 */
class DepthState {
  capacity = 64;
  isObject = new Uint8Array(this.capacity);
  startOf = new Int32Array(this.capacity);
  keyAt = new Uint8Array(this.capacity);
  isBase = new Uint8Array(this.capacity);
  tableAt = new Int32Array(this.capacity);
  schemaAt = new Int32Array(this.capacity);
  catalogAt = new Int32Array(this.capacity);
  locationAt = new Int32Array(this.capacity);
  locationEnd = new Int32Array(this.capacity);

  grow(): void {
    this.capacity *= 2;
    const bigger = <A extends Uint8Array | Int32Array>(a: A): A => {
      const b = new (a.constructor as new (n: number) => A)(this.capacity);
      b.set(a);
      return b;
    };
    this.isObject = bigger(this.isObject);
    this.startOf = bigger(this.startOf);
    this.keyAt = bigger(this.keyAt);
    this.isBase = bigger(this.isBase);
    this.tableAt = bigger(this.tableAt);
    this.schemaAt = bigger(this.schemaAt);
    this.catalogAt = bigger(this.catalogAt);
    this.locationAt = bigger(this.locationAt);
    this.locationEnd = bigger(this.locationEnd);
  }
}

const state = new DepthState();

interface Candidate {
  at: number;
  schema: string;
  table: string;
  catalog: string;
  location: number | null;
}

/**
 * The table references of a parse as `tableReferences` finds them in its tree, or null when the
 * text holds something only the tree can answer (see the module comment).
 */
export function scanTableReferences(json: string): ScannedReferences | null {
  // A bare SHOW/DESCRIBE is refused by a check that reads the tree.
  if (json.includes('"SHOW_REF"')) return null;
  const s = state;
  const candidates: Candidate[] = [];
  const scopes: Array<{ start: number; end: number; names: Set<string> }> = [];
  // CTE names per depth of the object defining them, while it is open.
  const cteNames = new Map<number, string[]>();
  let statements = 0;
  // The first statement's query node: the walk's root.
  let rootStart = -1;
  let rootEnd = -1;
  let depth = -1;
  let expectKey = false;
  const n = json.length;
  let i = 0;
  while (i < n) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      if (depth < 0) return null;
      if (expectKey) {
        // Keys are the serializer's field names, without escapes: an escaped quote taken for the
        // key's end is followed by no colon, and the text is refused.
        const close = json.indexOf('"', i + 1);
        if (close < 0 || json.charCodeAt(close + 1) !== COLON) return null;
        s.keyAt[depth] = keyOf(json, i + 1, close - i - 1);
        expectKey = false;
        i = close + 2;
        continue;
      }
      const close = stringEnd(json, i);
      if (close < 0) return null;
      if (s.isObject[depth] === 1) {
        const key = s.keyAt[depth];
        if (key === TYPE) s.isBase[depth] = close - i === 11 && json.startsWith('BASE_TABLE', i + 1) ? 1 : 0;
        else if (key === TABLE_NAME) s.tableAt[depth] = i;
        else if (key === SCHEMA_NAME) s.schemaAt[depth] = i;
        else if (key === CATALOG_NAME) s.catalogAt[depth] = i;
        else if (key === QUERY_LOCATION) {
          s.locationAt[depth] = i;
          s.locationEnd[depth] = close + 1;
        } else if (key === KEY && depth >= 3 && s.isObject[depth - 1] === 0 && s.keyAt[depth - 2] === MAP && s.keyAt[depth - 3] === CTE_MAP) {
          const names = cteNames.get(depth - 3);
          if (names) names.push(stringAt(json, i));
          else cteNames.set(depth - 3, [stringAt(json, i)]);
        }
      }
      i = close + 1;
      continue;
    }
    if (c === COMMA) {
      expectKey = depth >= 0 && s.isObject[depth] === 1;
      i++;
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth >= 0 && s.isObject[depth] === 1) {
        // A container as the value of a key the walk reads as a string: only the tree can say what it means.
        const key = s.keyAt[depth];
        if (key === TABLE_NAME || key === SCHEMA_NAME || key === CATALOG_NAME) return null;
      }
      if (++depth === s.capacity) s.grow();
      s.startOf[depth] = i;
      s.keyAt[depth] = OTHER;
      if (c === OPEN_OBJECT) {
        s.isObject[depth] = 1;
        s.isBase[depth] = 0;
        s.tableAt[depth] = -1;
        s.schemaAt[depth] = -1;
        s.catalogAt[depth] = -1;
        s.locationAt[depth] = -1;
        if (depth === 2 && s.isObject[1] === 0 && s.keyAt[0] === STATEMENTS) statements++;
        expectKey = true;
      } else {
        s.isObject[depth] = 0;
        expectKey = false;
      }
      i++;
      continue;
    }
    if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth < 0 || s.isObject[depth] !== (c === CLOSE_OBJECT ? 1 : 0)) return null;
      if (c === CLOSE_OBJECT) {
        if (s.isBase[depth] === 1 && s.tableAt[depth] >= 0) {
          candidates.push({
            at: s.startOf[depth],
            schema: s.schemaAt[depth] < 0 ? '' : stringAt(json, s.schemaAt[depth]),
            table: stringAt(json, s.tableAt[depth]),
            catalog: s.catalogAt[depth] < 0 ? '' : stringAt(json, s.catalogAt[depth]),
            location: locationAt(json, s.locationAt[depth], s.locationEnd[depth]),
          });
        }
        const names = cteNames.get(depth);
        if (names) {
          scopes.push({ start: s.startOf[depth], end: i, names: new Set(names.map((name) => name.toLowerCase())) });
          cteNames.delete(depth);
        }
        if (depth === 3 && statements === 1 && rootStart < 0 && s.keyAt[2] === NODE && s.keyAt[0] === STATEMENTS) {
          rootStart = s.startOf[depth];
          rootEnd = i;
        }
      }
      depth--;
      expectKey = false;
      i++;
      continue;
    }
    // The serializer writes no whitespace; text that has some is left to the tree reader.
    if (depth < 0 || c === 32 || c === 10 || c === 13 || c === 9) return null;
    // A bare value: a number, true, false, null, or a non-finite number (read as null by the tree reader).
    let end = i + 1;
    for (;;) {
      const e = json.charCodeAt(end);
      if (e === COMMA || e === CLOSE_OBJECT || e === CLOSE_ARRAY || Number.isNaN(e)) break;
      if (e === 32 || e === 10 || e === 13 || e === 9) return null;
      end++;
    }
    if (s.isObject[depth] === 1) {
      const key = s.keyAt[depth];
      if (key === QUERY_LOCATION) {
        s.locationAt[depth] = i;
        s.locationEnd[depth] = end;
      } else if (key === TABLE_NAME || key === SCHEMA_NAME || key === CATALOG_NAME) {
        // The walk would read a number or boolean here with String(); no parser writes one.
        if (end - i !== 4 || !json.startsWith('null', i)) return null;
        if (key === TABLE_NAME) s.tableAt[depth] = -1;
        else if (key === SCHEMA_NAME) s.schemaAt[depth] = -1;
        else s.catalogAt[depth] = -1;
      }
    }
    i = end;
  }
  if (depth !== -1) return null;
  candidates.sort((a, b) => a.at - b.at);
  const refs: TableRef[] = [];
  for (const ref of candidates) {
    if (ref.at < rootStart || ref.at > rootEnd) continue;
    const lower = ref.table.toLowerCase();
    const isCte = ref.schema === '' && ref.catalog === '' && scopes.some((scope) => scope.start >= rootStart && scope.start <= ref.at && ref.at <= scope.end && scope.names.has(lower));
    if (!isCte) refs.push({ schema: ref.schema, table: ref.table, location: ref.location });
  }
  return { statements, refs };
}
