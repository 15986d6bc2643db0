/**
 * The fourteen built-in masking methods (docs/decisions.md "Masking policy"). Each compiles to a DuckDB
 * SQL expression, so masking runs inside the query; each also has a JavaScript twin (`apply`)
 * for the post-execution fallback, and the unit tests check that both agree.
 *
 * Conventions every method follows: NULL in gives NULL out; a value the method cannot
 * interpret (a word given to `range`, a number given to `date_shift`) gives NULL, never the
 * raw value.
 */
import crypto from 'node:crypto';
import type { MaskingColumnInfo, MaskingMethod } from '../../sdk/index.js';
import { quoteLiteral } from '../../sdk/index.js';
import type { MaskKeys } from './keys.js';

type Config = Record<string, any>;

/** The column as text, exactly as DuckDB would cast it. */
const text = (column: string) => `CAST(${column} AS VARCHAR)`;

const INTEGER_TYPES = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/i;
const FLOAT_TYPES = /^(FLOAT|REAL|DOUBLE)$/i;
const DECIMAL_TYPE = /^DECIMAL\(\d+,\s*\d+\)$/i;
const TIMESTAMP_TYPES = /^(TIMESTAMP|TIMESTAMP WITH TIME ZONE|TIMESTAMPTZ|TIMESTAMP_S|TIMESTAMP_MS|TIMESTAMP_NS|DATETIME)$/i;
/** A type name safe to splice into CAST(... AS <type>). */
const PLAIN_TYPE = /^[A-Za-z][A-Za-z0-9_ ]*(\(\d+(,\s*\d+)?\))?$/;

function sha256Hex(value: string): string {
  // One call, no Hash object per value (the result masker hashes every value of a page; engines: Node >= 20.19).
  return crypto.hash('sha256', value, 'hex');
}

/** A value as DuckDB's CAST(x AS VARCHAR) prints it (for the JavaScript twins). */
export function asDuckText(value: unknown, type?: string): string {
  if (typeof value === 'number' && type && FLOAT_TYPES.test(type) && Number.isInteger(value)) return value.toFixed(1);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}

function toNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return null;
}

/** The first 8 hex digits of the keyed HMAC of a value, as a BIGINT in [0, 2^32). */
function keyedWordSql(keys: MaskKeys, method: string, column: string, seedKey: string): string {
  // BIGINT, not UBIGINT: the shift below subtracts, and UBIGINT arithmetic overflows under 0.
  return `CAST(('0x' || left(${keys.hmacSql(method, seedKey, text(column))}, 8)) AS BIGINT)`;
}
function keyedWordJs(keys: MaskKeys, method: string, value: string, seedKey: string): number {
  return parseInt(keys.hmacHex(method, seedKey, value).slice(0, 8), 16);
}

/** Unit interval [0, 1], deterministic per value, key and seed_key. */
function unitSql(keys: MaskKeys, column: string, seedKey: string): string {
  return `(${keyedWordSql(keys, 'noise', column, seedKey)} / 4294967295.0)`;
}
function unitJs(keys: MaskKeys, value: string, seedKey: string): number {
  return keyedWordJs(keys, 'noise', value, seedKey) / 4294967295;
}

/** Whole-day shift in [-max, -1] ∪ [1, max]: never 0, so a shifted date never equals its source. */
function shiftSql(keys: MaskKeys, column: string, maxDays: number, seedKey: string): string {
  const k = `(${keyedWordSql(keys, 'date_shift', column, seedKey)} % ${2 * maxDays})`;
  return `CAST(CASE WHEN ${k} < ${maxDays} THEN ${k} - ${maxDays} ELSE ${k} - ${maxDays - 1} END AS INTEGER)`;
}
function shiftJs(keys: MaskKeys, value: string, maxDays: number, seedKey: string): number {
  const k = keyedWordJs(keys, 'date_shift', value, seedKey) % (2 * maxDays);
  return k < maxDays ? k - maxDays : k - maxDays + 1;
}

const LOWER_ASCII = 'abcdefghijklmnopqrstuvwxyz';
const UPPER_ASCII = LOWER_ASCII.toUpperCase();
/** RE2's `\s`, which DuckDB's regular expressions use; not JavaScript's, which adds vertical tab and Unicode spaces. */
const RE2_SPACES = /[\t\n\f\r ]+/;

/** Digits and the separators a phone or card number is written with: what the mask never stars on its own. */
const DIGITS_AND_SEPARATORS = '0123456789 +().-/';

/**
 * SQL keeping the last n digits of a string and replacing every other digit with `*`
 * (separators stay). NULL gives NULL. Anything that is neither a digit nor a separator (a
 * letter, a word: text that is not a number at all) becomes `*` too, so no input comes back
 * unchanged.
 *
 * Why this shape: DuckDB pays per query for every regular expression in the text (each is
 * compiled when the query starts) and for every function node, whatever the row count, and a
 * masked page is usually a few rows. So the expression holds one regular expression: its two
 * mentions (the tail and its length) are the same subexpression, which DuckDB's optimizer
 * computes once (no CASE around it, which would stop that), and the non-separators are starred
 * by translate() with the value's own list of them (`other`, also one subexpression) instead of
 * a second, global regexp_replace. strlen (bytes) >= the characters of `other`, so translate()
 * has a `*` for each of them (a shorter target would delete characters instead).
 * test/plugins/masking/last-digits.test.ts pins that this gives what the former five-regex
 * expression gave for every input it lists, on every rewrite path.
 */
function lastDigitsSql(column: string, n: number): string {
  const v = text(column);
  const tail = `regexp_extract(${v}, '(?:[0-9][^0-9]*){${n}}$')`;
  const digitsMasked = `translate(left(${v}, length(${v}) - length(${tail})), '0123456789', '**********') || ${tail}`;
  const other = `translate(${v}, '${DIGITS_AND_SEPARATORS}', '')`;
  return `translate(${digitsMasked}, ${other}, repeat('*', strlen(${other})))`;
}
/** What the digit mask keeps as it is besides digits: the separators, and `*` (which it writes itself). */
const KEPT_BESIDE_DIGITS = new Set([...DIGITS_AND_SEPARATORS.replace(/[0-9]/g, ''), '*'].map((c) => c.charCodeAt(0)));
const isDigit = (code: number) => code >= 48 && code <= 57;
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * lastDigitsSql's twin, in one pass over the text (the result masker runs it on every value of a
 * page): the last n digits kept, every other digit `*`, every character that is neither a digit
 * nor a separator `*` (one `*` per code point, as SQL's translate() gives), separators kept.
 * With fewer than n digits the SQL finds no tail and masks every digit; so does this.
 */
function lastDigitsJs(value: string, n: number): string {
  // Index of the first kept digit: scanning from the end, the n-th digit met.
  let firstKept = value.length;
  let toKeep = n;
  for (let i = value.length - 1; i >= 0 && toKeep > 0; i--) {
    if (isDigit(value.charCodeAt(i))) {
      toKeep--;
      firstKept = i;
    }
  }
  if (toKeep > 0) firstKept = value.length;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (isDigit(code)) out += i >= firstKept ? value[i] : '*';
    else if (KEPT_BESIDE_DIGITS.has(code)) out += value[i];
    else {
      out += '*';
      // A surrogate pair is one character: one `*`.
      if (isHighSurrogate(code) && i + 1 < value.length && isLowSurrogate(value.charCodeAt(i + 1))) i++;
    }
  }
  return out;
}

function formatBucket(x: number, integral: boolean): string {
  if (integral) return String(Math.trunc(x));
  return Number.isInteger(x) ? x.toFixed(1) : String(x);
}

/** phone and credit_card: the same digit masking under two names, as docs/decisions.md "Masking policy" lists both. */
function lastDigitsMethod(name: string, description: string): MaskingMethod {
  return {
    name,
    description,
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { show_last: { type: 'integer', minimum: 0, maximum: 1000, default: 4, description: 'Digits kept at the end' } },
    },
    expression: (c, cfg) => lastDigitsSql(c, Number(cfg.show_last)),
    apply: (v, cfg, info) => (v == null ? null : lastDigitsJs(asDuckText(v, info.type), Number(cfg.show_last))),
  };
}

const noConfig = { type: 'object', additionalProperties: false, properties: {} };

/**
 * The built-in methods. `keys` holds the project's masking key: `consistent_hash`, `noise` and
 * `date_shift` are HMAC-SHA256 under keys derived from it (keys.ts), so a caller who can hash
 * candidate values cannot reproduce them.
 */
export function builtinMethods(keys: MaskKeys): MaskingMethod[] {
  return [
  {
    name: 'hash',
    description: 'First 8 hex characters of the SHA-256 hash of the value (unkeyed: reversible by guessing for values from a small set); deterministic, not meant for joins.',
    configSchema: noConfig,
    expression: (c) => `left(sha256(${text(c)}), 8)`,
    apply: (v, _cfg, info) => (v == null ? null : sha256Hex(asDuckText(v, info.type)).slice(0, 8)),
  },
  {
    name: 'redact',
    description: 'Replaced by ***.',
    configSchema: noConfig,
    expression: (c) => `CASE WHEN ${c} IS NULL THEN NULL ELSE '***' END`,
    apply: (v) => (v == null ? null : '***'),
  },
  {
    name: 'null',
    description: 'Replaced by NULL (the column keeps its type).',
    configSchema: noConfig,
    expression: (_c, _cfg, info) => (info.type && PLAIN_TYPE.test(info.type) ? `CAST(NULL AS ${info.type})` : 'NULL'),
    apply: () => null,
  },
  {
    name: 'partial',
    description: 'Shows the first and/or last N characters; the middle is replaced by *. A value no longer than both together is masked entirely.',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        show_first: { type: 'integer', minimum: 0, default: 0, description: 'Characters kept at the start' },
        show_last: { type: 'integer', minimum: 0, default: 0, description: 'Characters kept at the end' },
      },
    },
    expression: (c, cfg) => {
      const v = text(c);
      const f = Number(cfg.show_first);
      const l = Number(cfg.show_last);
      return `CASE WHEN ${c} IS NULL THEN NULL WHEN length(${v}) <= ${f + l} THEN repeat('*', length(${v})) ELSE left(${v}, ${f}) || repeat('*', length(${v}) - ${f + l}) || right(${v}, ${l}) END`;
    },
    apply: (v, cfg, info) => {
      if (v == null) return null;
      const s = [...asDuckText(v, info.type)];
      const f = Number(cfg.show_first);
      const l = Number(cfg.show_last);
      if (s.length <= f + l) return '*'.repeat(s.length);
      return s.slice(0, f).join('') + '*'.repeat(s.length - f - l) + (l > 0 ? s.slice(s.length - l).join('') : '');
    },
  },
  {
    name: 'truncate',
    description: 'First N characters followed by ...',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { length: { type: 'integer', minimum: 0, default: 3, description: 'Characters kept' } },
    },
    expression: (c, cfg) => `left(${text(c)}, ${Number(cfg.length)}) || '...'`,
    apply: (v, cfg, info) => (v == null ? null : [...asDuckText(v, info.type)].slice(0, Number(cfg.length)).join('') + '...'),
  },
  {
    name: 'email',
    description: 'Local part replaced by ***, domain kept (a value without @ becomes ***).',
    configSchema: noConfig,
    expression: (c) => {
      const v = text(c);
      return `CASE WHEN ${c} IS NULL THEN NULL WHEN strpos(${v}, '@') > 0 THEN '***@' || split_part(${v}, '@', -1) ELSE '***' END`;
    },
    apply: (v, _cfg, info) => {
      if (v == null) return null;
      const s = asDuckText(v, info.type);
      const at = s.lastIndexOf('@');
      return at >= 0 ? '***@' + s.slice(at + 1) : '***';
    },
  },
  lastDigitsMethod('phone', 'Keeps the last N digits; every other digit becomes * (separators stay).'),
  {
    name: 'first_initial',
    description: 'A name reduced to its initials, each followed by a period (Ada Lovelace → A.L.); ASCII letters are upper-cased.',
    configSchema: noConfig,
    // Split on runs of whitespace (RE2's \s: space, tab, newline, form feed, carriage return);
    // each non-empty word gives its first character and a period (empty pieces at the ends give
    // nothing). Only a-z are upper-cased, by translate(): a Unicode upper-casing is not the same
    // in DuckDB and in JavaScript (ß, ligatures, Greek with ypogegrammeni), and the twin below
    // must give what the SQL gives for every text (result-masking.ts masks with it).
    expression: (c) =>
      `translate(array_to_string(list_transform(string_split_regex(${text(c)}, '\\s+'), w -> left(w, 1) || CASE WHEN w = '' THEN '' ELSE '.' END), ''), '${LOWER_ASCII}', '${UPPER_ASCII}')`,
    apply: (v, _cfg, info) =>
      v == null
        ? null
        : asDuckText(v, info.type)
            .split(RE2_SPACES)
            .filter((w) => w !== '')
            .map((w) => [...w][0] + '.')
            .join('')
            .replace(/[a-z]/g, (ch) => ch.toUpperCase()),
  },
  {
    name: 'ip_address',
    description: 'Keeps the first N octets of an IPv4 address and replaces the others with x; anything else becomes x.x.x.x.',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { keep_octets: { type: 'integer', minimum: 0, maximum: 3, default: 2, description: 'Leading octets kept' } },
    },
    expression: (c, cfg) => {
      const v = text(c);
      const k = Number(cfg.keep_octets);
      // The kept octets, then the masked ones as one literal ('.x.x'): DuckDB pays per query for
      // each concatenation node, and the literal tail needs none.
      const kept = [1, 2, 3].filter((i) => i <= k).map((i) => `split_part(${v}, '.', ${i})`);
      const masked = quoteLiteral(Array.from({ length: 4 - k }, () => 'x').join('.'));
      const octets = kept.length === 0 ? masked : `${kept.join(" || '.' || ")} || '.' || ${masked}`;
      return `CASE WHEN ${c} IS NULL THEN NULL WHEN regexp_full_match(${v}, '[0-9]{1,3}(\\.[0-9]{1,3}){3}') THEN ${octets} ELSE 'x.x.x.x' END`;
    },
    apply: (v, cfg, info) => {
      if (v == null) return null;
      const s = asDuckText(v, info.type);
      if (!/^[0-9]{1,3}(\.[0-9]{1,3}){3}$/.test(s)) return 'x.x.x.x';
      const k = Number(cfg.keep_octets);
      return s
        .split('.')
        .map((p, i) => (i < k ? p : 'x'))
        .join('.');
    },
  },
  lastDigitsMethod('credit_card', 'Masks all but the last N digits with * (separators stay).'),
  {
    name: 'range',
    description: 'A number replaced by its bucket as <low>-<high> (e.g. 50000-60000); non-numbers become NULL.',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { bucket_size: { type: 'number', exclusiveMinimum: 0, default: 10000, description: 'Width of each bucket' } },
    },
    expression: (c, cfg) => {
      const b = Number(cfg.bucket_size);
      const n = `TRY_CAST(${c} AS DOUBLE)`;
      const low = `(floor(${n} / ${b}) * ${b})`;
      // TRY_CAST: a value beyond BIGINT gives NULL, never an error that would quote it.
      const fmt = (x: string) => (Number.isInteger(b) ? `CAST(TRY_CAST(${x} AS BIGINT) AS VARCHAR)` : `CAST(${x} AS VARCHAR)`);
      return `CASE WHEN ${n} IS NULL OR isinf(${n}) OR isnan(${n}) THEN NULL ELSE ${fmt(low)} || '-' || ${fmt(`(${low} + ${b})`)} END`;
    },
    apply: (v, cfg) => {
      const n = toNumber(v);
      if (n === null) return null;
      const b = Number(cfg.bucket_size);
      const low = Math.floor(n / b) * b;
      const integral = Number.isInteger(b);
      const fits = (x: number) => !integral || (x >= -9223372036854775808 && x < 9223372036854775808);
      if (!fits(low) || !fits(low + b)) return null;
      return `${formatBucket(low, integral)}-${formatBucket(low + b, integral)}`;
    },
  },
  {
    name: 'noise',
    description: 'Adds deterministic noise within ± percentage, keyed by the project key (and seed_key), stable per value; integer columns stay integers; 0 stays 0.',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        percentage: { type: 'number', exclusiveMinimum: 0, maximum: 1000, default: 10.0, description: 'Maximum change, in percent of the value' },
        seed_key: { type: 'string', default: '', writeOnly: true, description: 'Optional extra secret mixed into the key (the project key is always used); the same value and seed_key always give the same output' },
      },
    },
    expression: (c, cfg, info) => {
      const n = `TRY_CAST(${c} AS DOUBLE)`;
      const noisy = `(${n} * (1 + ${Number(cfg.percentage) / 100} * (2 * ${unitSql(keys, c, String(cfg.seed_key))} - 1)))`;
      // Infinite or NaN (input or overflow) gives NULL: never an error, never the raw infinity.
      const finite = `CASE WHEN isfinite(${noisy}) THEN ${noisy} END`;
      const type = info.type ?? '';
      if (INTEGER_TYPES.test(type)) return `TRY_CAST(round(${finite}) AS ${type})`;
      if (DECIMAL_TYPE.test(type) || FLOAT_TYPES.test(type)) return `TRY_CAST(${finite} AS ${type})`;
      return finite;
    },
    apply: (v, cfg, info) => {
      const n = toNumber(v);
      if (n === null) return null;
      const noisy = n * (1 + (Number(cfg.percentage) / 100) * (2 * unitJs(keys, asDuckText(v, info.type), String(cfg.seed_key)) - 1));
      if (!Number.isFinite(noisy)) return null;
      return INTEGER_TYPES.test(info.type ?? '') ? Math.round(noisy) : noisy;
    },
  },
  {
    name: 'date_shift',
    description: 'Moves a date or timestamp by a whole number of days within ± max_days (never 0), keyed by the project key (and seed_key), stable per value; a result out of range (or an infinite date) becomes NULL.',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_days: { type: 'integer', minimum: 1, maximum: 36500, default: 30, description: 'Largest shift in days' },
        seed_key: { type: 'string', default: '', writeOnly: true, description: 'Optional extra secret mixed into the key (the project key is always used)' },
      },
    },
    expression: (c, cfg, info) => {
      const shift = shiftSql(keys, c, Number(cfg.max_days), String(cfg.seed_key));
      const type = (info.type ?? '').toUpperCase();
      // A date within max_days of the end of DuckDB's range (years -5877641..5881580 for DATE,
      // -290308..294247 for TIMESTAMP) gives NULL instead of an overflow error, whose text would
      // show the date and the shift; year() of an infinite date is NULL, so it gives NULL too.
      // (try() would do, but DuckDB refuses it around the key's scalar subquery.)
      const inDateRange = (d: string) => `year(${d}) BETWEEN -5877500 AND 5881400`;
      const inTimestampRange = (t: string) => `year(${t}) BETWEEN -290200 AND 294100`;
      if (type === 'DATE') return `CASE WHEN ${inDateRange(c)} THEN ${c} + ${shift} END`;
      if (TIMESTAMP_TYPES.test(type)) return `CASE WHEN ${inTimestampRange(c)} THEN ${c} + to_days(${shift}) END`;
      // Text (or unknown type): a date-looking string stays a date string, a timestamp-looking one a timestamp string.
      const v = text(c);
      const asDate = `TRY_CAST(${v} AS DATE)`;
      const asTimestamp = `TRY_CAST(${v} AS TIMESTAMP)`;
      return `CASE WHEN regexp_full_match(${v}, '[0-9]{4}-[0-9]{2}-[0-9]{2}') THEN CASE WHEN ${inDateRange(asDate)} THEN CAST(${asDate} + ${shift} AS VARCHAR) END WHEN ${inTimestampRange(asTimestamp)} THEN CAST(${asTimestamp} + to_days(${shift}) AS VARCHAR) END`;
    },
    apply: (v, cfg, info) => {
      if (v == null) return null;
      const s = asDuckText(v, info.type);
      const m = /^(\d{4})-(\d{2})-(\d{2})([ T](\d{2}):(\d{2}):(\d{2}(\.\d+)?))?$/.exec(s);
      if (!m || typeof v === 'number') return null;
      const shift = shiftJs(keys, s, Number(cfg.max_days), String(cfg.seed_key));
      const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + shift));
      if (Number.isNaN(d.getTime())) return null;
      const day = d.toISOString().slice(0, 10);
      return m[4] ? `${day} ${m[5]}:${m[6]}:${m[7]}` : day;
    },
  },
  {
    name: 'consistent_hash',
    description: 'Join-safe pseudonym: prefix followed by the first `length` hex characters of HMAC-SHA256 under the project key; the same input always gives the same output, in every table.',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        prefix: { type: 'string', default: '', description: 'Text put before the hash' },
        length: { type: 'integer', minimum: 4, maximum: 64, default: 8, description: 'Hex characters of the hash kept' },
      },
    },
    expression: (c, cfg) => `${quoteLiteral(String(cfg.prefix))} || left(${keys.hmacSql('consistent_hash', '', text(c))}, ${Number(cfg.length)})`,
    apply: (v, cfg, info) => (v == null ? null : String(cfg.prefix) + keys.hmacHex('consistent_hash', '', asDuckText(v, info.type)).slice(0, Number(cfg.length))),
  },
  ];
}

export type { MaskingColumnInfo };
