/** What the quality commands print. */
import type { CliIO } from '../../sdk/index.js';
import { summarizeOutcome } from './assertions.js';
import type { ContractRun } from './contracts.js';
import type { TableProfile } from './api-types.js';


export function printContractRun(io: CliIO, run: ContractRun): void {
  for (const r of run.results) {
    const status = r.passed ? 'PASS' : r.severity === 'warn' ? 'WARN' : 'FAIL';
    io.out(`${status}  ${r.contract_name}  (${r.model}, ${r.duration_ms} ms)`);
    if (r.error) io.out(`      ${r.error}`);
    for (const a of r.assertions) if (!a.passed) io.out(`      ✗ ${a.expression}: ${summarizeOutcome(a)}`);
  }
  for (const e of run.errors) io.err(`invalid contract: ${e.file}${e.index === undefined ? '' : ` (entry ${e.index + 1})`}: ${e.reason}`);
  const warned = run.results.filter((r) => !r.passed && r.severity === 'warn').length;
  io.out(`${run.total} contract(s): ${run.passed} passed, ${run.failed - warned} failed, ${warned} warning(s)`);
}

export function printProfile(io: CliIO, model: string, p: TableProfile): void {
  io.out(`${model}: ${p.row_count} rows, ${p.column_count} columns`);
  io.table(
    p.columns.map((c) => ({
      column: c.name,
      type: c.type,
      nulls: c.null_count,
      'null %': c.null_pct,
      distinct: c.distinct_count,
      min: c.masked ? '(masked)' : c.min,
      max: c.masked ? '(masked)' : c.max,
      avg: c.avg,
      samples: (c.sample_values ?? []).map((v) => String(v)).join(', '),
    })),
  );
  for (const n of p.notes ?? []) io.err(n);
}
