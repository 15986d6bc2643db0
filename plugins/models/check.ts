/**
 * `dp check`: model validation (every model parses, every dependency resolves, and the SQL binds
 * with EXPLAIN where its upstream relations exist), then inline assertions and contracts through
 * the checkers contributed to the models.checks extension point (the quality plugin's, when enabled). Exit code 1 when any validation fails, any
 * assertion fails, or a contract of severity `error` fails (SPEC Errors 2); `warn` never fails it.
 */
import {
  errorMessage,
  isDpError,
  type AssertionOutcome,
  type ContractRunResult,
  type PluginContext,
} from '../../sdk/index.js';
import { keyOf, type ModelGraph } from './dag.js';
import type { Discovery } from './discovery.js';
import type { ModelExtensions } from './extensions.js';
import { activeTarget, catalogAndStates } from './on-target.js';
import { nativeOnDuckdb } from './native.js';
import { runUnitTests, type UnitTestReport } from './unit-tests.js';

export interface ModelValidation {
  model: string;
  path: string;
  valid: boolean;
  bound: boolean;
  errors: string[];
  warnings: string[];
}

export interface CheckReport {
  status: 'pass' | 'fail';
  exit_code: 0 | 1;
  validation: { passed: number; failed: number; errors: Array<{ code: string; message: string; details: Record<string, unknown> }>; models: ModelValidation[] };
  assertions: {
    evaluated: boolean;
    note?: string;
    total: number;
    passed: number;
    failed: number;
    results: Array<{ model: string; expression: string; passed: boolean; detail: Record<string, unknown> }>;
    skipped: Array<{ model: string; reason: string }>;
  };
  /** Model unit tests (tests/unit/*.yml): any failure, error or unreadable file fails the check. */
  unit_tests: UnitTestReport;
  contracts: (ContractRunResult & { evaluated: true; errors_failed: number; warnings_failed: number }) | { evaluated: false; note: string };
}

/** What the check reads of the models engine (service.ts, which runs the check and passes itself). */
export interface CheckedModels {
  graph(): Promise<ModelGraph>;
  readonly discovery: Pick<Discovery, 'modelFiles'>;
  readonly extensions: Pick<ModelExtensions, 'checker'>;
}

export async function runCheck(ctx: PluginContext, engine: CheckedModels): Promise<CheckReport> {
  const structural: CheckReport['validation']['errors'] = [];
  const models: ModelValidation[] = [];
  const target = activeTarget(ctx);
  const [catalog] = await catalogAndStates(ctx);
  let graph = null;
  try {
    graph = await engine.graph();
  } catch (e) {
    if (!isDpError(e)) throw e;
    structural.push({ code: e.code, message: e.message, details: e.details });
  }
  const files = await engine.discovery.modelFiles();
  for (const file of files) {
    const v: ModelValidation = { model: file.full_name, path: file.path, valid: true, bound: false, errors: [], warnings: [] };
    models.push(v);
    if (file.parseError) {
      v.errors.push(`${file.path}${file.parseErrorLine ? `:${file.parseErrorLine}` : ''}: ${file.parseError}`);
      continue;
    }
    const gm = graph?.byKey.get(keyOf(file.full_name));
    if (!gm) continue;
    if (!target && file.dialect) {
      v.warnings.push(`Not bound: ${nativeOnDuckdb(file)}`);
      continue;
    }
    const missing = gm.upstream.filter((u) => !catalog.has(keyOf(u)));
    if (missing.length) {
      v.warnings.push(`Not bound: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not in the database yet (run dp seed / dp transform)`);
      continue;
    }
    try {
      if (target) await target.verifyModel(gm.info);
      else {
        // Binding reads the files a model names (CSV sniffing): the same rule as the build first.
        await ctx.db.assertProjectFileReads(file.query);
        await ctx.db.run(`EXPLAIN ${file.body}`);
      }
      v.bound = true;
    } catch (e) {
      v.errors.push(`${file.path}: ${errorMessage(e).split('\n')[0]}`);
    }
  }
  for (const v of models) v.valid = v.errors.length === 0;

  const quality = engine.extensions.checker();
  const assertions: CheckReport['assertions'] = { evaluated: false, total: 0, passed: 0, failed: 0, results: [], skipped: [] };
  let contracts: CheckReport['contracts'];
  if (!quality) {
    assertions.note = 'The quality plugin is disabled: inline assertions were not evaluated';
    contracts = { evaluated: false, note: 'The quality plugin is disabled: contracts were not run' };
  } else {
    assertions.evaluated = true;
    for (const file of files) {
      if (file.assertions.length === 0) continue;
      if (!catalog.has(keyOf(file.full_name))) {
        assertions.skipped.push({ model: file.full_name, reason: 'not built yet' });
        continue;
      }
      let outcomes: AssertionOutcome[];
      try {
        outcomes = await quality.evaluateAssertions(file.full_name, file.assertions);
      } catch (e) {
        outcomes = file.assertions.map((expression) => ({ expression, passed: false, detail: { error: errorMessage(e) } }));
      }
      for (const o of outcomes) assertions.results.push({ model: file.full_name, ...o });
    }
    assertions.total = assertions.results.length;
    assertions.passed = assertions.results.filter((r) => r.passed).length;
    assertions.failed = assertions.total - assertions.passed;
    const run = await quality.runContracts();
    const failedBy = (severity: string) => run.results.filter((r) => !r.passed && r.severity === severity).length;
    contracts = { evaluated: true, ...run, errors_failed: failedBy('error'), warnings_failed: failedBy('warn') };
  }

  let unitTests: UnitTestReport = { total: 0, passed: 0, failed: 0, errors: 0, results: [], file_errors: [] };
  if (graph) unitTests = await runUnitTests(ctx, engine);
  const unitFailing = unitTests.failed + unitTests.errors + unitTests.file_errors.length > 0;
  const failedModels = models.filter((m) => !m.valid).length;
  const failing = structural.length > 0 || failedModels > 0 || assertions.failed > 0 || unitFailing || (contracts.evaluated && contracts.errors_failed > 0);
  return {
    status: failing ? 'fail' : 'pass',
    exit_code: failing ? 1 : 0,
    validation: { passed: models.length - failedModels, failed: failedModels, errors: structural, models },
    assertions,
    unit_tests: unitTests,
    contracts,
  };
}
