/**
 * SQL lint for model files. Text rules (keyword case, whitespace, indentation, line length) work on
 * a lexer's tokens; structural rules (SELECT * in marts, unused CTE, implicit column alias) read
 * DuckDB's parse tree. `fix` rewrites files with sql-formatter in the configured dialect, keeping
 * the directive comments at the top of each file.
 *
 * project.yml:
 *   lint:
 *     dialect: duckdb          # any sql-formatter language
 *     rules: all               # or a list of rule names
 *     keyword_case: upper      # or lower
 *     max_line_length: 120
 *     marts_schemas: [marts]   # where SELECT * is reported
 */
import type { SqlLanguage } from 'sql-formatter';
import { badRequest, errorMessage, requireOnFirstUse, type PluginContext, type SqlNode } from '../../sdk/index.js';
import { isDirectiveLine } from './directives.js';
import { LINT_CONFIG } from './config.js';
import type { ModelFile } from './discovery.js';
import type { ModelsEngine } from './service.js';
import { lineAt, tokenize } from './sqltext.js';
import { cteUsage, isStar, isUnaliasedExpression, outputSelects } from './sqltree.js';

export const RULES = {
  'parse-error': 'The SQL must parse as one SELECT statement',
  'keyword-case': 'SQL keywords use one case (lint.keyword_case, default upper)',
  'trailing-whitespace': 'No spaces or tabs at the end of a line',
  'select-star-in-marts': 'Mart models list their columns instead of SELECT *',
  'unused-cte': 'Every CTE is referenced',
  'implicit-column-alias': 'Computed output columns have an explicit alias',
  'inconsistent-indentation': 'Indentation uses one character (spaces or tabs) throughout a file',
  'line-length': 'Lines are at most lint.max_line_length characters (default 120)',
} as const;
export type RuleName = keyof typeof RULES;

export interface Finding {
  file: string;
  line: number;
  rule: RuleName;
  message: string;
}

export interface LintConfig {
  dialect: string;
  rules: Set<RuleName>;
  keywordCase: 'upper' | 'lower';
  maxLineLength: number;
  martsSchemas: Set<string>;
}

/**
 * Words treated as keywords: DuckDB's reserved and type/function keywords (duckdb_keywords())
 * plus clause words that are unreserved in DuckDB's grammar but read as keywords in a query.
 */
const CLAUSE_WORDS = ['between', 'exists', 'interval', 'values', 'over', 'partition', 'filter', 'rows', 'range', 'preceding', 'following', 'unbounded', 'current', 'row', 'nulls', 'recursive', 'materialized'];
const KEYWORD_CATEGORIES = `('reserved', 'type_function')`;

/** sql-formatter (its grammars are large) loads when a lint first needs it, not at plugin setup. */
const sqlFormatter = requireOnFirstUse<typeof import('sql-formatter')>(import.meta.url, 'sql-formatter');

export function lintConfig(ctx: PluginContext): LintConfig {
  const raw = ctx.config(LINT_CONFIG) as Record<string, unknown>;
  const dialect = String(raw.dialect ?? 'duckdb');
  const { supportedDialects } = sqlFormatter();
  if (!(supportedDialects as readonly string[]).includes(dialect)) {
    throw badRequest('invalid_lint_dialect', `lint.dialect '${dialect}' is not a dialect sql-formatter knows (${supportedDialects.join(', ')})`, { field: 'lint.dialect' });
  }
  const all = Object.keys(RULES) as RuleName[];
  let rules = new Set<RuleName>(all);
  if (Array.isArray(raw.rules)) {
    const unknown = raw.rules.filter((r) => !all.includes(r as RuleName));
    if (unknown.length) throw badRequest('unknown_lint_rule', `lint.rules names unknown rules: ${unknown.join(', ')} (known: ${all.join(', ')})`, { field: 'lint.rules', unknown });
    rules = new Set(raw.rules as RuleName[]);
  }
  const keywordCase = String(raw.keyword_case ?? 'upper').toLowerCase();
  if (keywordCase !== 'upper' && keywordCase !== 'lower') throw badRequest('invalid_lint_option', "lint.keyword_case must be 'upper' or 'lower'", { field: 'lint.keyword_case' });
  const martsSchemas = Array.isArray(raw.marts_schemas) ? raw.marts_schemas.map(String) : ['marts'];
  return { dialect, rules, keywordCase, maxLineLength: Number(raw.max_line_length ?? 120), martsSchemas: new Set(martsSchemas.map((s) => s.toLowerCase())) };
}

let keywordCache: Set<string> | null = null;
async function keywords(ctx: PluginContext): Promise<Set<string>> {
  if (!keywordCache) {
    const rows = await ctx.db.all<{ k: string }>(`SELECT keyword_name AS k FROM duckdb_keywords() WHERE keyword_category IN ${KEYWORD_CATEGORIES}`);
    keywordCache = new Set([...rows.map((r) => r.k.toLowerCase()), ...CLAUSE_WORDS]);
  }
  return keywordCache;
}

export async function lintFile(file: ModelFile, tree: SqlNode | null, config: LintConfig, kw: Set<string>): Promise<Finding[]> {
  const findings: Finding[] = [];
  const add = (rule: RuleName, line: number, message: string) => {
    if (config.rules.has(rule)) findings.push({ file: file.path, line, rule, message });
  };
  const text = file.sql.replace(/\r\n/g, '\n');
  const lines = text.split('\n');

  lines.forEach((l, i) => {
    if (/[ \t]+$/.test(l)) add('trailing-whitespace', i + 1, 'Trailing whitespace');
    if (l.length > config.maxLineLength) add('line-length', i + 1, `Line is ${l.length} characters (max ${config.maxLineLength})`);
  });

  // Indentation: the style most lines use is the file's; lines that differ or mix are reported.
  const indents = lines.map((l) => /^[ \t]*/.exec(l)![0]).map((ws, i) => ({ ws, i, blank: lines[i].trim() === '' }));
  const spaceLines = indents.filter((x) => !x.blank && x.ws.length && !x.ws.includes('\t')).length;
  const tabLines = indents.filter((x) => !x.blank && x.ws.length && !x.ws.includes(' ')).length;
  const style = tabLines > spaceLines ? '\t' : ' ';
  for (const x of indents) {
    if (x.blank || !x.ws.length) continue;
    if (x.ws.includes(' ') && x.ws.includes('\t')) add('inconsistent-indentation', x.i + 1, 'Indentation mixes tabs and spaces');
    else if (!x.ws.includes(style)) add('inconsistent-indentation', x.i + 1, `Indented with ${style === ' ' ? 'tabs' : 'spaces'} while the file uses ${style === ' ' ? 'spaces' : 'tabs'}`);
  }

  const tokens = tokenize(text);
  const significant = tokens.filter((t) => t.kind !== 'whitespace' && t.kind !== 'comment');
  const badByLine = new Map<number, string[]>();
  significant.forEach((t, idx) => {
    if (t.kind !== 'word' || !kw.has(t.text.toLowerCase())) return;
    const prev = significant[idx - 1];
    const next = significant[idx + 1];
    if (prev?.text === '.' || next?.text === '.' || next?.text === '(') return;
    const wanted = config.keywordCase === 'upper' ? t.text.toUpperCase() : t.text.toLowerCase();
    if (t.text !== wanted) badByLine.set(t.line, [...(badByLine.get(t.line) ?? []), t.text]);
  });
  for (const [line, words] of badByLine) add('keyword-case', line, `Keyword${words.length > 1 ? 's' : ''} ${words.join(', ')} should be ${config.keywordCase} case`);

  // Native SQL (@config dialect=clickhouse) has no DuckDB tree: only the text rules above apply to it.
  if (file.dialect && !file.parseError) return sortFindings(findings);
  if (file.parseError || !tree) {
    add('parse-error', file.parseErrorLine ?? 1, file.parseError ?? 'The SQL does not parse');
    return sortFindings(findings);
  }
  for (const select of outputSelects(tree)) {
    for (const expr of select.select_list ?? []) {
      // DuckDB writes PIVOT, UNPIVOT and VALUES as SELECT * over them, with no position: those columns are the form's own.
      const synthesized = !(typeof expr.query_location === 'number' && expr.query_location < text.length);
      const line = synthesized ? 1 : lineAt(text, expr.query_location);
      if (synthesized && ['PIVOT', 'EXPRESSION_LIST'].includes(String(select.from_table?.type))) continue;
      if (isStar(expr) && config.martsSchemas.has(file.schema.toLowerCase())) add('select-star-in-marts', line, 'SELECT * in a mart model: list the columns so upstream changes cannot silently change it');
      if (isUnaliasedExpression(expr)) add('implicit-column-alias', line, 'Computed column without an alias: DuckDB would name it after the expression');
    }
  }
  for (const cte of cteUsage(tree)) {
    if (cte.references > 0) continue;
    const m = new RegExp(`\\b${cte.name.replace(/[^A-Za-z0-9_]/g, '')}\\s+AS\\b`, 'i').exec(text);
    add('unused-cte', m ? lineAt(text, m.index) : 1, `CTE '${cte.name}' is never used`);
  }
  return sortFindings(findings);
}

function sortFindings(f: Finding[]): Finding[] {
  return f.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.rule.localeCompare(b.rule));
}

/** The file formatted by sql-formatter, with every directive line moved to the top in order. */
export function fixedText(sql: string, config: LintConfig): string {
  const lines = sql.replace(/\r\n/g, '\n').split('\n');
  const directives = lines.filter(isDirectiveLine).map((l) => l.trim());
  const body = lines.filter((l) => !isDirectiveLine(l)).join('\n').trim();
  const formatted = sqlFormatter().format(body, { language: config.dialect as SqlLanguage, keywordCase: config.keywordCase, tabWidth: 4 }).trimEnd();
  return [...directives, formatted].join('\n') + '\n';
}

export interface LintReport {
  files: number;
  findings: Finding[];
  fixed: string[];
  fix_errors: Array<{ file: string; error: string }>;
  rules: Record<string, string>;
}

export async function runLint(ctx: PluginContext, engine: ModelsEngine, options: { fix?: boolean }): Promise<LintReport> {
  const config = lintConfig(ctx);
  const kw = await keywords(ctx);
  let files = await engine.discovery.modelFiles();
  const fixed: string[] = [];
  const fixErrors: LintReport['fix_errors'] = [];
  if (options.fix) {
    for (const file of files) {
      // lint.dialect formats DuckDB SQL; a native model's ClickHouse SQL (LIMIT n BY...) is left as written.
      if (file.dialect) continue;
      let next: string;
      try {
        next = fixedText(file.sql, config);
      } catch (e) {
        fixErrors.push({ file: file.path, error: errorMessage(e).split('\n')[0] });
        continue;
      }
      if (next !== file.sql) {
        ctx.project.writeFile(file.path, next);
        fixed.push(file.path);
      }
    }
    if (fixed.length) files = await engine.discovery.modelFiles();
  }
  const findings: Finding[] = [];
  for (const file of files) findings.push(...(await lintFile(file, await engine.discovery.tree(file), config, kw)));
  return {
    files: files.length,
    findings,
    fixed,
    fix_errors: fixErrors,
    rules: Object.fromEntries([...config.rules].map((r) => [r, RULES[r]])),
  };
}
