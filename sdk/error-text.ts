/**
 * The one redaction of error texts (docs/security.md "Error texts"). DuckDB, scripts and
 * connectors quote the values they failed on (`Could not convert string 'ada@example.com' to
 * INT32`, `Duplicate key "id: 5"`, `with value 3000000000 can't be cast`); a caller bound by a
 * masking policy must not read them, wherever the text is shown: run history, event streams,
 * MCP tools, alerts, notebook outputs, contract and assertion details, transform results.
 *
 * Values go, identifiers stay: `column "nme" not found` keeps its column name, because a name
 * is what the user needs to fix the error and no policy hides names.
 */
import type { Caller } from './auth.js';
import type { SseEvent, SseSource } from './routes.js';
import { DpError } from './errors.js';
import type { FireableHook } from './hooks.js';
import type { VALUES_HIDDEN_FROM } from './masking.js';

/** What a redacted value becomes (the masking `redact` method's output). */
export const REDACTED_VALUE = '***';

/**
 * Who reads texts stored or sent without a request (alerts, webhook payloads, stored check
 * results): any signed-in viewer, so they are redacted as a viewer would read them.
 */
export const VIEWER_AUDIENCE: Caller = Object.freeze({ username: null, role: 'viewer', authenticated: true });

/** Words after which a double-quoted name is an identifier (`column "x"`, `Candidate bindings: "a", "b"`). */
const IDENTIFIER_CONTEXT =
  /\b(?:column|columns|table|tables|view|views|schema|schemas|relation|relations|function|functions|macro|macros|name|named|alias|type|types|binding|bindings|catalog|database|index|sequence|field|fields|model|models|source|sources|struct|key name|use)\s*:?\s*\(?\s*$/i;
/** What may separate the names of a list of identifiers. */
const LIST_SEPARATOR = /^\s*(?:,|or|and|,\s*or)\s*$/i;
/** A possibly qualified SQL name (quoted identifiers rarely hold more). */
const IDENTIFIER_SHAPE = /^[\p{L}_][\p{L}\p{N}_$]*(?:\.[\p{L}_][\p{L}\p{N}_$]*)*$/u;
/** An unquoted number a message calls a value (`with value 3000000000`, `Cast of value -1`). */
const NUMERIC_VALUE = /\b(values?)(\s+)[-+]?(?:\d[\d_]*(?:\.\d+)?(?:e[-+]?\d+)?|\.\d+)\b/gi;

const isWordChar = (ch: string | undefined) => ch !== undefined && /[\p{L}\p{N}_]/u.test(ch);

/**
 * The text with every quoted value replaced by `***`, identifiers kept. A quote opens only where
 * a word does not continue (so `can't` and `model's` open nothing) and closes at the next quote
 * no word continues after (so `'o'brien'` is one value); a quote left open hides the rest.
 */
export function redactErrorValues(text: string): string {
  let out = '';
  let i = 0;
  let lastKeptIdentifierEnd = -1;
  while (i < text.length) {
    const ch = text[i]!;
    if ((ch !== "'" && ch !== '"') || isWordChar(text[i - 1])) {
      out += ch;
      i++;
      continue;
    }
    let close = -1;
    for (let j = text.indexOf(ch, i + 1); j >= 0; j = text.indexOf(ch, j + 1)) {
      if (text[j + 1] === ch) {
        j++; // a doubled quote inside the value ('it''s')
        continue;
      }
      if (!isWordChar(text[j + 1])) {
        close = j;
        break;
      }
    }
    if (close < 0) {
      out += `${ch}${REDACTED_VALUE}`;
      break;
    }
    const inner = text.slice(i + 1, close);
    const before = out.slice(Math.max(0, out.length - 40));
    const identifier =
      ch === '"' &&
      IDENTIFIER_SHAPE.test(inner) &&
      (IDENTIFIER_CONTEXT.test(before) || (lastKeptIdentifierEnd >= 0 && LIST_SEPARATOR.test(out.slice(lastKeptIdentifierEnd))));
    out += identifier ? text.slice(i, close + 1) : `${ch}${REDACTED_VALUE}${ch}`;
    if (identifier) lastKeptIdentifierEnd = out.length;
    i = close + 1;
  }
  return out.replace(NUMERIC_VALUE, `$1$2${REDACTED_VALUE}`);
}

/** Keys whose strings are error texts, at any depth: `error`, `errors`, `message`, `error_message`, `stderr`, ... */
const ERROR_KEY = /(?:^|_)(?:error|errors|message|messages|stderr|traceback|reason)$/i;

/** `value` with every string under an error key (and every string nested under one) redacted; other fields as they are. */
export function redactErrorFields<T>(value: T): T {
  const walk = (v: unknown, inError: boolean): unknown => {
    if (typeof v === 'string') return inError ? redactErrorValues(v) : v;
    if (Array.isArray(v)) return v.map((item) => walk(item, inError));
    if (v && typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)) {
      const copy: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) copy[k] = walk(item, inError || ERROR_KEY.test(k));
      return copy;
    }
    return v;
  };
  return walk(value, false) as T;
}

/** The redaction as it applies to one caller: identity for a caller no masking policy binds. */
export interface ErrorTextFilter {
  /** True when values are redacted for this caller. */
  readonly redacts: boolean;
  text(text: string): string;
  text(text: string | null | undefined): string | null | undefined;
  /** `value` with its error fields redacted (see redactErrorFields). */
  fields<T>(value: T): T;
  /** An event stream whose events' error fields are redacted on the way out. */
  events(source: SseSource): SseSource;
  /** A thrown error as this caller may read it: a DpError with its message and details' error fields redacted; anything else as is. */
  error(e: unknown): unknown;
}

const IDENTITY: ErrorTextFilter = {
  redacts: false,
  text: ((t: string | null | undefined) => t) as ErrorTextFilter['text'],
  fields: (v) => v,
  events: (s) => s,
  error: (e) => e,
};

const REDACTING: ErrorTextFilter = {
  redacts: true,
  text: ((t: string | null | undefined) => (typeof t === 'string' ? redactErrorValues(t) : t)) as ErrorTextFilter['text'],
  fields: redactErrorFields,
  events: (source) => ({
    since: (lastEventId) => source.since(lastEventId).map(redactEvent),
    subscribe: (listener) => source.subscribe((e) => listener(redactEvent(e))),
  }),
  error: (e) => (e instanceof DpError ? new DpError(e.status, e.code, redactErrorValues(e.message), redactErrorFields(e.details), e.headers) : e),
};

function redactEvent(e: SseEvent): SseEvent {
  return { ...e, data: typeof e.data === 'string' ? redactErrorValues(e.data) : redactErrorFields(e.data) };
}

/**
 * The error-text filter for `caller`: every outlet that shows an error text (a route, an event
 * stream, an MCP tool, an alert) passes it through this. `hidden` is the plugin's firing side of
 * the masking plugin's hook point `masking.valuesHiddenFrom` (`ctx.hook(VALUES_HIDDEN_FROM)`,
 * listed under `contributes.fires`; no dependency on masking needed), which masking answers: values are redacted when a policy binds the caller; with no tap (masking
 * disabled) nothing is hidden.
 */
export async function errorTextsFor(hidden: FireableHook<typeof VALUES_HIDDEN_FROM>, caller: Caller): Promise<ErrorTextFilter> {
  if (!hidden.isUsed()) return IDENTITY;
  return (await hidden.promise(caller)) === true ? REDACTING : IDENTITY;
}
