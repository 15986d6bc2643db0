/**
 * Model unit tests: `tests/unit/*.yml` give fixed rows for every relation a model reads and the
 * rows it must produce. Each test runs on a throwaway in-memory DuckDB (ctx.db.scratch): the
 * relations the model reads, taken from DuckDB's parse of the model, are each bound to a mock
 * of the same name created there from `given`; the warehouse is never read. A relation the
 * model reads without a mock, or a mock for a relation it does not read, is an error.
 *
 *   tests:
 *     - name: revenue_counts_paid_orders
 *       model: marts.customer_revenue
 *       given:
 *         - input: staging.stg_orders
 *           columns: {order_id: INTEGER, status: VARCHAR, amount: DOUBLE}   # optional types
 *           rows:
 *             - {order_id: 1, status: paid, amount: 10}      # a mapping
 *             - [2, refunded, 5]                             # or a list (in `columns` order)
 *         - input: seeds.customers
 *           csv: |                                           # or CSV text (DuckDB's reader)
 *             customer_id,name
 *             1,Ada
 *       expect:
 *         rows:
 *           - {customer_id: 1, revenue: 10}
 *         ordered: false                                     # default: compared as a multiset
 *
 * Only the columns `expect` names are compared, each cast to the type the model produced.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import {
  ajvFieldError,
  badRequest,
  errorMessage,
  quoteIdent,
  quoteLiteral,
  readTreeJson,
  readYaml,
  walkProjectFiles,
  type DbConnection,
  type PluginContext,
  type UnitTestResult,
} from '../../sdk/index.js';
import { findModel, keyOf, type GraphModel, type ModelGraph } from './dag.js';
import type { ModelFile } from './discovery.js';
import { forEachTableReference } from './sqltree.js';

export const UNIT_TESTS_DIR = 'tests/unit';

type Rows = Array<Record<string, unknown> | unknown[]>;

interface RowsSpec {
  /** Column name → DuckDB type, or a list of names (types inferred). */
  columns?: Record<string, string> | string[];
  rows?: Rows;
  csv?: string;
}

export interface UnitTestSpec {
  name: string;
  model: string;
  description?: string;
  given: Array<RowsSpec & { input: string }>;
  expect: RowsSpec & { ordered?: boolean };
  /** Project-relative file and 1-based line of the test. */
  file: string;
  line: number | null;
}

const ROWS_PROPS = {
  columns: {
    oneOf: [
      // A DuckDB type name: INTEGER, DECIMAL(10, 2), VARCHAR[], TIMESTAMP WITH TIME ZONE (no SQL beyond a type).
      { type: 'object', additionalProperties: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_ ]*(\\(\\s*\\d+\\s*(,\\s*\\d+\\s*)?\\))?(\\[\\d*\\])*$' } },
      { type: 'array', items: { type: 'string', minLength: 1 } },
    ],
  },
  rows: { type: 'array', items: { type: ['object', 'array'] } },
  csv: { type: 'string' },
};

const FILE_SCHEMA = {
  type: 'object',
  required: ['tests'],
  additionalProperties: false,
  properties: {
    tests: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'model', 'given', 'expect'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$' },
          model: { type: 'string', minLength: 1 },
          description: { type: 'string' },
          given: {
            type: 'array',
            items: { type: 'object', required: ['input'], additionalProperties: false, properties: { input: { type: 'string', minLength: 1 }, ...ROWS_PROPS } },
          },
          expect: { type: 'object', additionalProperties: false, properties: { ...ROWS_PROPS, ordered: { type: 'boolean' } } },
        },
      },
    },
  },
};

/** Compiled when the first unit-test file is read (not at plugin setup: most commands read none). */
let fileValidator: ValidateFunction | undefined;
const validateFile = (): ValidateFunction => (fileValidator ??= new (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv({ allErrors: false, allowUnionTypes: true }).compile(FILE_SCHEMA));

export interface UnitTestFileError {
  file: string;
  line: number | null;
  message: string;
}

/** Every unit test in tests/unit, with the errors of files that could not be read. */
export function discoverUnitTests(ctx: PluginContext): { tests: UnitTestSpec[]; errors: UnitTestFileError[] } {
  const tests: UnitTestSpec[] = [];
  const errors: UnitTestFileError[] = [];
  const seen = new Map<string, string>();
  for (const f of walkProjectFiles(ctx.project, UNIT_TESTS_DIR, { extensions: ['.yml', '.yaml'], recursive: true })) {
    const rel = ctx.project.relative(f.abs);
    let doc;
    try {
      doc = readYaml(fs.readFileSync(f.abs, 'utf8'), rel, 'invalid_unit_test');
    } catch (e) {
      const details = (e as { details?: { line?: number } }).details;
      errors.push({ file: rel, line: details?.line ?? null, message: errorMessage(e) });
      continue;
    }
    if (!validateFile()(doc.value)) {
      const err = ajvFieldError(validateFile().errors![0]);
      const line = doc.lineOf(err.parts) ?? null;
      errors.push({ file: rel, line, message: `${rel}${line ? ` line ${line}` : ''}: ${err.message}` });
      continue;
    }
    const value = doc.value as { tests: Array<Omit<UnitTestSpec, 'file' | 'line'>> };
    value.tests.forEach((t, i) => {
      const line = doc.lineOf(['tests', i]) ?? null;
      const previous = seen.get(t.name);
      if (previous) {
        errors.push({ file: rel, line, message: `${rel}${line ? ` line ${line}` : ''}: unit test '${t.name}' is also defined in ${previous}` });
        return;
      }
      seen.set(t.name, `${rel}${line ? ` line ${line}` : ''}`);
      tests.push({ ...t, file: rel, line });
    });
  }
  return { tests, errors };
}

function where(t: UnitTestSpec): string {
  return `${t.file}${t.line ? ` line ${t.line}` : ''}`;
}

/** A model file by `schema.name` or bare name, for checks that run while the graph does not resolve. */
function fileAsModel(files: ModelFile[], name: string): Pick<GraphModel, 'file' | 'info'> | undefined {
  const f = files.find((x) => keyOf(x.full_name) === keyOf(name)) ?? (name.includes('.') ? undefined : files.find((x) => keyOf(x.name) === keyOf(name)));
  return f ? ({ file: f, info: { full_name: f.full_name } } as Pick<GraphModel, 'file' | 'info'>) : undefined;
}

/** The relations a model reads, as `schema.name` in its own spelling of the reference. */
function modelReads(m: Pick<GraphModel, 'file'>): string[] {
  const refs = m.file.parseError ? [] : m.file.refs;
  return [...new Set(refs.map((r) => `${r.schema || 'main'}.${r.table}`))];
}

/**
 * Checks a test against the project without running it: its model exists and parses, and its
 * mocks match the relations the model reads. Returns the problems (empty when fine).
 */
export function staticProblems(t: UnitTestSpec, graph: ModelGraph | ModelFile[]): string[] {
  const m = Array.isArray(graph) ? fileAsModel(graph, t.model) : findModel(graph, t.model);
  if (!m) return [`${where(t)}: unit test '${t.name}' names model '${t.model}', which does not exist`];
  if (m.file.parseError) return [`${where(t)}: model ${m.info.full_name} does not parse: ${m.file.parseError}`];
  const problems: string[] = [];
  const reads = modelReads(m);
  const mocked = new Map<string, string>();
  for (const g of t.given) {
    const resolved = resolveInput(g.input, reads);
    if (!resolved) problems.push(`${where(t)}: given input '${g.input}' is not a relation ${m.info.full_name} reads (it reads ${reads.join(', ') || 'nothing'})`);
    else if (mocked.has(keyOf(resolved))) problems.push(`${where(t)}: '${g.input}' is given twice`);
    else mocked.set(keyOf(resolved), g.input);
  }
  for (const r of reads) {
    if (!mocked.has(keyOf(r))) problems.push(`${where(t)}: ${m.info.full_name} reads ${r}, which has no mock in given (a unit test never reads the warehouse)`);
  }
  for (const [label, spec] of [['expect', t.expect], ...t.given.map((g) => [`given '${g.input}'`, g] as const)] as Array<[string, RowsSpec]>) {
    if (spec.rows && spec.csv !== undefined) problems.push(`${where(t)}: ${label} has both rows and csv; give one`);
    if (spec.rows?.some((r) => Array.isArray(r)) && !spec.columns) problems.push(`${where(t)}: ${label} has rows as lists, which need columns (their order)`);
  }
  return problems;
}

/** The read relation a `given.input` mocks: by `schema.name` as the model wrote it, or by a bare name the model reads once. */
function resolveInput(input: string, reads: string[]): string | undefined {
  const direct = reads.find((r) => keyOf(r) === keyOf(input));
  if (direct) return direct;
  if (input.includes('.')) return undefined;
  const bare = reads.filter((r) => keyOf(r.split('.').pop()!) === keyOf(input));
  return bare.length === 1 ? bare[0] : undefined;
}

const lc = (s: string) => s.toLowerCase();

function columnNames(spec: RowsSpec): string[] {
  if (Array.isArray(spec.columns)) return spec.columns;
  if (spec.columns) return Object.keys(spec.columns);
  const names: string[] = [];
  for (const r of spec.rows ?? []) if (!Array.isArray(r)) for (const k of Object.keys(r)) if (!names.some((n) => lc(n) === lc(k))) names.push(k);
  return names;
}

function typeOf(spec: RowsSpec, column: string): string | undefined {
  return spec.columns && !Array.isArray(spec.columns) ? spec.columns[column] : undefined;
}

function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : quoteLiteral(String(v));
  if (v instanceof Date) return quoteLiteral(v.toISOString());
  if (typeof v === 'object') return quoteLiteral(JSON.stringify(v));
  return quoteLiteral(String(v));
}

/** The SELECT giving a spec's rows, each column cast to its declared type (or `types`, when given). */
function rowsSelect(spec: RowsSpec, label: string, types?: Map<string, string>): string {
  const names = columnNames(spec);
  if (names.length === 0) throw badRequest('invalid_unit_test', `${label} names no column (give columns, or rows as mappings)`, {});
  const rows = spec.rows ?? [];
  const cast = (name: string, value: string) => {
    const type = typeOf(spec, name) ?? types?.get(lc(name));
    return type ? `CAST(${value} AS ${type})` : value;
  };
  const typedNull = names.map((n) => `${cast(n, 'NULL')} AS ${quoteIdent(n)}`).join(', ');
  if (rows.length === 0) return `SELECT ${typedNull} WHERE FALSE`;
  const tuples = rows.map((r, i) => {
    const values = Array.isArray(r) ? r : names.map((n) => r[Object.keys(r).find((k) => lc(k) === lc(n)) ?? n]);
    if (Array.isArray(r) && r.length !== names.length) throw badRequest('invalid_unit_test', `${label} row ${i + 1} has ${r.length} values for ${names.length} columns`, {});
    if (!Array.isArray(r)) {
      const unknown = Object.keys(r).filter((k) => !names.some((n) => lc(n) === lc(k)));
      if (unknown.length) throw badRequest('invalid_unit_test', `${label} row ${i + 1} has columns not in columns: ${unknown.join(', ')}`, {});
    }
    return `(${values.map(literal).join(', ')})`;
  });
  const alias = names.map((_, i) => `__dp_c${i}`);
  return `SELECT ${names.map((n, i) => `${cast(n, alias[i])} AS ${quoteIdent(n)}`).join(', ')} FROM (VALUES ${tuples.join(', ')}) AS __dp_v(${alias.join(', ')})`;
}

/** Loads one spec into `table` on the scratch connection (CSV text through DuckDB's reader). */
async function loadRows(c: DbConnection, spec: RowsSpec, table: string, label: string, csvDir: string, n: number): Promise<void> {
  if (spec.csv !== undefined) {
    const file = path.join(csvDir, `given_${n}.csv`);
    fs.writeFileSync(file, spec.csv);
    const typed = spec.columns && !Array.isArray(spec.columns) ? `, types = {${Object.entries(spec.columns).map(([k, v]) => `${quoteLiteral(k)}: ${quoteLiteral(v)}`).join(', ')}}` : '';
    await c.run(`CREATE TABLE ${table} AS SELECT * FROM read_csv(${quoteLiteral(file)}, header = true${typed})`);
    return;
  }
  await c.run(`CREATE TABLE ${table} AS ${rowsSelect(spec, label)}`);
}

function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** The scratch database's schema holding the mocks (a name no project relation is bound to there). */
const MOCK_SCHEMA = '__dp_mock';

/**
 * The model's SQL reading the mocks: DuckDB parses the model, every base-table reference (CTE
 * names excluded) is renamed to its mock, and DuckDB writes the SQL back. A reference keeps its
 * own name as alias, so `orders.amount` still resolves. A reference with no mock is an error.
 */
async function bindToMocks(ctx: PluginContext, m: GraphModel, mockFor: Map<string, string>): Promise<string> {
  const parsed = await ctx.db.parse(m.file.body);
  if (!parsed.ok) {
    throw new Error(
      parsed.notSelect
        ? `${m.info.full_name} is a statement form DuckDB's serializer cannot write back (a PIVOT without an IN list): give the pivot values (PIVOT … ON col IN (…)) to unit test it`
        : `${m.info.full_name} does not parse: ${parsed.error}`,
    );
  }
  const tree = readTreeJson(parsed.json);
  const unbound: string[] = [];
  for (const statement of tree.statements) {
    forEachTableReference(statement.node, (node) => {
      const relation = `${node.schema_name || 'main'}.${node.table_name}`;
      const mock = mockFor.get(keyOf(relation));
      if (!mock) {
        unbound.push(relation);
        return;
      }
      if (!node.alias) node.alias = node.table_name;
      node.catalog_name = '';
      node.schema_name = MOCK_SCHEMA;
      node.table_name = mock;
    });
  }
  if (unbound.length) throw new Error(`${m.info.full_name} reads ${[...new Set(unbound)].join(', ')}, which has no mock in given (a unit test never reads the warehouse)`);
  return ctx.db.deparse(tree);
}

/** Runs one test on its own scratch database. */
export async function runUnitTest(ctx: PluginContext, t: UnitTestSpec, graph: ModelGraph): Promise<UnitTestResult> {
  const started = performance.now();
  const result = (status: UnitTestResult['status'], extra: Partial<UnitTestResult> = {}): UnitTestResult => ({
    name: t.name,
    model: findModel(graph, t.model)?.info.full_name ?? t.model,
    file: t.file,
    line: t.line,
    status,
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
    missing: [],
    unexpected: [],
    ...extra,
  });
  const problems = staticProblems(t, graph);
  if (problems.length) return result('error', { error: problems.join('; ') });
  const m = findModel(graph, t.model)!;
  const reads = modelReads(m);
  const csvDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-unit-'));
  const c = await ctx.db.scratch({ readableDirectories: [csvDir] });
  try {
    let n = 0;
    const mockFor = new Map<string, string>();
    await c.run(`CREATE SCHEMA ${quoteIdent(MOCK_SCHEMA)}`);
    for (const g of t.given) {
      const relation = resolveInput(g.input, reads)!;
      const mock = `given_${n + 1}`;
      mockFor.set(keyOf(relation), mock);
      await loadRows(c, g, `${quoteIdent(MOCK_SCHEMA)}.${quoteIdent(mock)}`, `${where(t)}: given '${g.input}'`, csvDir, n++);
    }
    let sql: string;
    try {
      sql = await bindToMocks(ctx, m, mockFor);
    } catch (e) {
      return result('error', { error: `${where(t)}: ${errorMessage(e).split('\n')[0]}` });
    }
    try {
      await c.run(`CREATE TEMP TABLE __dp_actual AS\n${sql}\n`);
    } catch (e) {
      return result('error', { error: `${m.info.path}: ${errorMessage(e).split('\n')[0]}` });
    }
    const actualTypes = new Map(
      (await c.all<{ column_name: string; column_type: string }>('DESCRIBE __dp_actual')).map((r) => [lc(r.column_name), r.column_type]),
    );
    const expectLabel = `${where(t)}: expect`;
    const names = t.expect.csv !== undefined ? null : columnNames(t.expect);
    if (t.expect.csv !== undefined) await loadRows(c, t.expect, '__dp_expected', expectLabel, csvDir, n++);
    else await c.run(`CREATE TEMP TABLE __dp_expected AS ${rowsSelect(t.expect, expectLabel, actualTypes)}`);
    const expectedColumns = names ?? (await c.all<{ column_name: string }>('DESCRIBE __dp_expected')).map((r) => r.column_name);
    const absent = expectedColumns.filter((col) => !actualTypes.has(lc(col)));
    if (absent.length) return result('error', { error: `${expectLabel} names column${absent.length > 1 ? 's' : ''} ${absent.join(', ')}, which ${m.info.full_name} does not produce (it has ${[...actualTypes.keys()].join(', ')})` });
    const list = expectedColumns.map(quoteIdent).join(', ');
    const projected = (table: string) => `SELECT ${expectedColumns.map((col) => `CAST(${quoteIdent(col)} AS ${actualTypes.get(lc(col))}) AS ${quoteIdent(col)}`).join(', ')} FROM ${table}`;
    let missing: Array<Record<string, unknown>>;
    let unexpected: Array<Record<string, unknown>>;
    if (t.expect.ordered) {
      const exp = (await c.all(`${projected('__dp_expected')}`)).map(plain) as Array<Record<string, unknown>>;
      const act = (await c.all(`SELECT ${list} FROM __dp_actual`)).map(plain) as Array<Record<string, unknown>>;
      missing = [];
      unexpected = [];
      for (let i = 0; i < Math.max(exp.length, act.length); i++) {
        if (JSON.stringify(exp[i]) === JSON.stringify(act[i])) continue;
        if (exp[i]) missing.push({ _position: i + 1, ...exp[i] });
        if (act[i]) unexpected.push({ _position: i + 1, ...act[i] });
      }
    } else {
      missing = (await c.all(`${projected('__dp_expected')} EXCEPT ALL SELECT ${list} FROM __dp_actual`)).map(plain) as Array<Record<string, unknown>>;
      unexpected = (await c.all(`SELECT ${list} FROM __dp_actual EXCEPT ALL ${projected('__dp_expected')}`)).map(plain) as Array<Record<string, unknown>>;
    }
    return result(missing.length || unexpected.length ? 'fail' : 'pass', { missing, unexpected });
  } catch (e) {
    return result('error', { error: errorMessage(e).split('\n')[0] });
  } finally {
    c.close();
    fs.rmSync(csvDir, { recursive: true, force: true });
  }
}

export interface UnitTestReport {
  total: number;
  passed: number;
  failed: number;
  errors: number;
  results: UnitTestResult[];
  /** Files that could not be read (bad YAML or schema), each naming file and line. */
  file_errors: UnitTestFileError[];
}

/** Runs the tests (all, or those of one model, or by name). */
export async function runUnitTests(ctx: PluginContext, engine: { graph(): Promise<ModelGraph> }, filter: { model?: string | null; names?: string[] | null } = {}): Promise<UnitTestReport> {
  const { tests, errors } = discoverUnitTests(ctx);
  const graph = await engine.graph();
  let selected = tests;
  if (filter.model) {
    const m = findModel(graph, filter.model);
    if (!m) throw badRequest('unknown_model', `No model named '${filter.model}'`, { model: filter.model });
    selected = selected.filter((t) => findModel(graph, t.model)?.info.full_name === m.info.full_name);
  }
  if (filter.names?.length) {
    const unknown = filter.names.filter((n) => !tests.some((t) => t.name === n));
    if (unknown.length) throw badRequest('unknown_unit_test', `No unit test named ${unknown.map((u) => `'${u}'`).join(', ')}`, { names: unknown });
    selected = selected.filter((t) => filter.names!.includes(t.name));
  }
  const results: UnitTestResult[] = [];
  for (const t of selected) results.push(await runUnitTest(ctx, t, graph));
  return {
    total: results.length,
    passed: results.filter((r) => r.status === 'pass').length,
    failed: results.filter((r) => r.status === 'fail').length,
    errors: results.filter((r) => r.status === 'error').length,
    results,
    file_errors: errors,
  };
}
