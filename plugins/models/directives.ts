/**
 * Model directives: comment lines that configure a model.
 *
 *   -- @config materialized=table, schema=marts
 *   -- @depends_on staging.stg_orders, stg_customers
 *   -- @assert unique(customer_id)
 *
 * The legacy forms `-- depends_on: a, b` and `-- assert: expr` are read the same way.
 */
import { badRequest } from '../../sdk/index.js';

export interface Directives {
  config: Record<string, string>;
  /** 1-based line of each `@config` key (lower-case), for errors that name the line. */
  configLines: Record<string, number>;
  /** Null when the file has no depends_on directive (dependencies are then extracted from the SQL). */
  dependsOn: string[] | null;
  assertions: string[];
  /** 1-based line numbers of the directive lines. */
  lines: number[];
}

const MODERN = /^\s*--\s*@(config|depends_on|assert)\b\s*(.*?)\s*$/;
const LEGACY = /^\s*--\s*(depends_on|assert)\s*:\s*(.*?)\s*$/;

/** True for a line that is a directive comment (kept at the top by `lint --fix`). */
export function isDirectiveLine(line: string): boolean {
  return MODERN.test(line) || LEGACY.test(line);
}

/** Splits on commas outside quotes and brackets. */
function splitList(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = '';
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '(' || ch === '[') depth++;
    else if (ch === ')' || ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(cur.trim());
      cur = '';
      continue;
    }
    cur += ch;
  }
  if (cur.trim()) parts.push(cur.trim());
  return parts.filter(Boolean);
}

function unquote(value: string): string {
  const m = /^(['"])(.*)\1$/.exec(value);
  return m ? m[2] : value;
}

/**
 * An assertion written as one quoted string (`@assert "sum(revenue) > 0"`) is unwrapped; a quoted
 * identifier inside a longer expression (`"col" IS NOT NULL`) is left alone.
 */
function assertionText(raw: string): string {
  const m = /^"([^"]*)"$/.exec(raw.trim());
  return m ? m[1].trim() : raw.trim();
}

export function parseDirectives(sql: string, file: string): Directives {
  const config: Record<string, string> = {};
  const configLines: Record<string, number> = {};
  let dependsOn: string[] | null = null;
  const assertions: string[] = [];
  const lines: number[] = [];
  const all = sql.split('\n');
  all.forEach((text, index) => {
    // Directives are comments: a line without `--` needs no regular expression.
    if (!text.includes('--')) return;
    const m = MODERN.exec(text) ?? LEGACY.exec(text);
    if (!m) return;
    lines.push(index + 1);
    const [, kind, rest] = m;
    if (kind === 'config') {
      for (const pair of splitList(rest)) {
        const eq = pair.indexOf('=');
        if (eq < 1) {
          throw badRequest('invalid_directive', `${file}:${index + 1}: @config takes key=value pairs, got '${pair}'`, { file, line: index + 1 });
        }
        const key = pair.slice(0, eq).trim().toLowerCase();
        config[key] = unquote(pair.slice(eq + 1).trim());
        configLines[key] = index + 1;
      }
    } else if (kind === 'depends_on') {
      dependsOn = [...(dependsOn ?? []), ...splitList(rest).map(unquote)];
    } else if (rest) {
      assertions.push(assertionText(rest));
    }
  });
  return { config, configLines, dependsOn, assertions, lines };
}

/** The `@config` line create/promote write at the top of a new model file. */
export function configLine(materialized: string, schema: string): string {
  return `-- @config materialized=${materialized}, schema=${schema}`;
}
