/**
 * Contracts (docs/decisions.md "Contract"): YAML files in contracts/ with a top-level `contracts:` list.
 * A broken file or entry is reported with its file and reason and never blocks the valid ones.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ajvFieldError, compileOnFirstUse, errorMessage, isDpError, notFound, readYaml, walkProjectFiles, type ContractRunResult, type PluginContext } from '../../sdk/index.js';
import type { Contract } from './api-types.js';
import { evaluateAssertions } from './assertions.js';
import { checkReader } from './reader.js';
import { isoUtc, parseJson, splitRelation, STORED_AUDIENCE, utcNow } from './relations.js';

export interface ContractLoadError {
  file: string;
  /** Position in the file's `contracts:` list, when the problem is one entry. */
  index?: number;
  reason: string;
}

export type ContractRun = ContractRunResult & { errors: ContractLoadError[] };

const CONTRACTS_DIR = 'contracts';

const contractSchema = {
  type: 'object',
  required: ['model', 'assertions'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1 },
    model: { type: 'string', pattern: '^[^.\\s]+\\.[^.\\s]+$' },
    description: { type: 'string' },
    severity: { enum: ['error', 'warn'] },
    assertions: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
  },
};

// ajv is required on the first contract read: a transform of a project without contracts never loads it.
const validateContract = compileOnFirstUse(() => new (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv({ allErrors: false, strict: false }).compile(contractSchema));

function describeAjvError(): string {
  const e = validateContract.errors?.[0];
  if (!e) return 'invalid contract';
  const { field, message } = ajvFieldError(e);
  if (e.keyword === 'pattern' && field === 'model') return "'model' must be schema.table";
  return field ? message : message.replace("'(top level)'", "'contract'");
}

function contractFiles(ctx: PluginContext): string[] {
  return walkProjectFiles(ctx.project, CONTRACTS_DIR, { extensions: ['.yml', '.yaml'] }).map((f) => f.abs);
}

/** Reads every contract file; the valid contracts and, separately, what is wrong with the rest. */
export function loadContracts(ctx: PluginContext): { contracts: Contract[]; errors: ContractLoadError[] } {
  const contracts: Contract[] = [];
  const errors: ContractLoadError[] = [];
  const byName = new Map<string, string>();
  for (const file of contractFiles(ctx)) {
    const rel = ctx.project.relative(file);
    const stem = path.basename(file).replace(/\.ya?ml$/i, '');
    let data: { contracts?: unknown } | null;
    try {
      data = readYaml(fs.readFileSync(file, 'utf8'), rel).value as { contracts?: unknown } | null;
    } catch (e) {
      const line = isDpError(e) ? (e.details.line as number | null) : null;
      errors.push({ file: rel, reason: `YAML syntax error${line ? ` at line ${line}` : ''}: ${errorMessage(e).replace(/^[^:]*: /, '')}` });
      continue;
    }
    if (!data || typeof data !== 'object' || !Array.isArray(data.contracts)) {
      errors.push({ file: rel, reason: "the file needs a top-level 'contracts:' list" });
      continue;
    }
    data.contracts.forEach((entry: unknown, index: number) => {
      if (!validateContract(entry)) {
        errors.push({ file: rel, index, reason: describeAjvError() });
        return;
      }
      const c = entry as Partial<Contract> & { model: string; assertions: string[] };
      const name = c.name ?? stem;
      const previous = byName.get(name);
      if (previous) {
        errors.push({ file: rel, index, reason: `duplicate contract name '${name}' (also defined in ${previous})${c.name ? '' : '; give this entry a name'}` });
        return;
      }
      byName.set(name, rel);
      contracts.push({ name, model: c.model, description: c.description ?? '', severity: c.severity ?? 'error', assertions: c.assertions, file: rel });
    });
  }
  return { contracts, errors };
}

/** Contracts selected by contract name, model (`schema.table`) or bare model name. */
export function selectContracts(all: Contract[], filter?: string | null): Contract[] {
  if (!filter) return all;
  return all.filter((c) => c.name === filter || c.model === filter || splitRelation(c.model).table === filter);
}

export async function runContracts(ctx: PluginContext, filter?: string | null): Promise<ContractRun> {
  const { contracts, errors } = loadContracts(ctx);
  const selected = selectContracts(contracts, filter);
  if (filter && selected.length === 0) {
    throw notFound('contract_not_found', `No contract is named '${filter}' or checks a model of that name`, {
      filter,
      contracts: contracts.map((c) => c.name),
    });
  }
  const results: ContractRunResult['results'] = [];
  for (const c of selected) {
    const started = performance.now();
    const { schema, table } = splitRelation(c.model);
    let error: string | null = null;
    let assertions: ContractRunResult['results'][number]['assertions'] = [];
    if (!(await checkReader(ctx, `contract ${c.name}`).exists(schema as string, table))) {
      error = `Model ${c.model} does not exist in the warehouse (has it been built?)`;
    } else {
      assertions = await evaluateAssertions(ctx, c.model, c.assertions, { audience: STORED_AUDIENCE });
    }
    const passed = error === null && assertions.every((a) => a.passed);
    const duration_ms = Math.round((performance.now() - started) * 100) / 100;
    results.push({ contract_name: c.name, model: c.model, passed, severity: c.severity, duration_ms, error, assertions });
    await ctx.db.run(
      `INSERT INTO _service.contract_results (id, contract_name, model, passed, severity, detail, checked_at, duration_ms, error)
       VALUES ($1, $2, $3, $4, $5, $6::JSON, $7::TIMESTAMP, $8, $9)`,
      [randomUUID(), c.name, c.model, passed, c.severity, JSON.stringify(assertions), utcNow(), duration_ms, error],
    );
  }
  const passedCount = results.filter((r) => r.passed).length;
  return { total: results.length, passed: passedCount, failed: results.length - passedCount, results, errors };
}

/** True when the run must fail a command: an `error` contract failed (docs/decisions.md "Errors" 2). */
export function hasBlockingFailure(run: ContractRunResult): boolean {
  return run.results.some((r) => !r.passed && r.severity === 'error');
}

export interface ContractHistoryRow {
  id: string;
  contract_name: string;
  model: string;
  passed: boolean;
  severity: string;
  duration_ms: number | null;
  error: string | null;
  detail: unknown;
  checked_at: string;
}

export async function contractHistory(ctx: PluginContext, options: { filter?: string | null; limit: number }): Promise<ContractHistoryRow[]> {
  const where = options.filter ? `WHERE contract_name = $1 OR model = $1 OR split_part(model, '.', 2) = $1` : '';
  const rows = await ctx.db.all(
    `SELECT id, contract_name, model, passed, severity, duration_ms, error, detail, CAST(checked_at AS VARCHAR) AS checked_at
       FROM _service.contract_results ${where} ORDER BY checked_at DESC, contract_name LIMIT ${Math.max(1, Math.floor(options.limit))}`,
    options.filter ? [options.filter] : [],
  );
  return rows.map((r) => ({
    id: String(r.id),
    contract_name: String(r.contract_name),
    model: String(r.model),
    passed: Boolean(r.passed),
    severity: String(r.severity),
    duration_ms: r.duration_ms === null ? null : Number(r.duration_ms),
    error: (r.error as string | null) ?? null,
    detail: parseJson(r.detail, []),
    checked_at: isoUtc(r.checked_at) as string,
  }));
}
