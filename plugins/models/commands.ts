/**
 * CLI commands of the models plugin (declared in plugin.json). Each handler imports the module
 * that does its work when it runs: this plugin also loads for its service alone (`dp tables`
 * and `dp query` load it for masking's lineage), and those commands need none of them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { errorTextsFor, LOCAL_ADMIN, VALUES_HIDDEN_FROM, type CliIO, type PluginContext } from '../../sdk/index.js';
import type { CheckReport } from './check.js';
import type { ModelsEngine } from './service.js';
import type { UnitTestReport } from './unit-tests.js';

const list = (v: unknown): string[] | null => {
  const items = (Array.isArray(v) ? v : v === undefined ? [] : [v]).flatMap((x) => String(x).split(',')).map((s) => s.trim()).filter(Boolean);
  return items.length ? items : null;
};

function printCheck(report: CheckReport, io: CliIO): void {
  for (const e of report.validation.errors) io.out(`error: ${e.message}`);
  io.table(
    report.validation.models.map((m) => ({ model: m.model, valid: m.valid ? 'ok' : 'FAIL', bound: m.bound ? 'yes' : 'no', detail: [...m.errors, ...m.warnings].join('; ') })),
    ['model', 'valid', 'bound', 'detail'],
  );
  if (report.assertions.evaluated) {
    io.out(`\nassertions: ${report.assertions.passed} passed, ${report.assertions.failed} failed${report.assertions.skipped.length ? `, ${report.assertions.skipped.length} models not built` : ''}`);
    for (const r of report.assertions.results.filter((x) => !x.passed)) io.out(`  FAIL ${r.model}: ${r.expression} ${JSON.stringify(r.detail)}`);
  } else io.out(`\n${report.assertions.note}`);
  if (report.contracts.evaluated) {
    const c = report.contracts;
    io.out(`contracts: ${c.passed} passed, ${c.failed} failed (${c.errors_failed} error, ${c.warnings_failed} warn)`);
    for (const r of c.results.filter((x) => !x.passed)) io.out(`  ${r.severity === 'error' ? 'FAIL' : 'WARN'} ${r.contract_name} (${r.model})${r.error ? `: ${r.error}` : ''}`);
  } else io.out(report.contracts.note);
  io.out(`unit tests: ${report.unit_tests.passed} passed, ${report.unit_tests.failed} failed, ${report.unit_tests.errors} errors`);
  printUnitFailures(report.unit_tests, io);
  io.out(`\ncheck ${report.status === 'pass' ? 'passed' : 'failed'}`);
}

/** Each failing unit test with its expected-but-missing and produced-but-unexpected rows. */
function printUnitFailures(report: UnitTestReport, io: CliIO): void {
  for (const e of report.file_errors) io.out(`  ERROR ${e.message}`);
  for (const r of report.results) {
    if (r.status === 'pass') continue;
    io.out(`  ${r.status === 'fail' ? 'FAIL' : 'ERROR'} ${r.name} (${r.model}, ${r.file}${r.line ? ` line ${r.line}` : ''})${r.error ? `: ${r.error}` : ''}`);
    for (const row of r.missing) io.out(`    - missing    ${JSON.stringify(row)}`);
    for (const row of r.unexpected) io.out(`    + unexpected ${JSON.stringify(row)}`);
  }
}

/**
 * How the user runs dp: `dp` when the `dp` on PATH is this very program (installed with
 * `npm install -g`, or `npm link`), else `node <its bin/dp.js>`, so that `dp init`'s next steps
 * work as printed.
 */
function dpCommand(): string {
  const self = process.argv[1] ? fs.realpathSync(process.argv[1]) : '';
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    try {
      if (fs.realpathSync(path.join(dir, 'dp')) === self) return 'dp';
    } catch {
      /* no dp in this folder */
    }
  }
  return self ? `node ${self}` : 'dp';
}

export function registerCommands(ctx: PluginContext, engine: ModelsEngine): void {
  // Relayed through POST /api/cli/run, build errors reach the caller as on the routes: through
  // the sdk's one redaction of error texts (docs/security.md "Error texts").
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  const shownTo = async <T>(io: CliIO, value: T): Promise<T> => (await errorTextsFor(valuesHidden, io.caller ?? LOCAL_ADMIN)).fields(value);

  ctx.command('transform', async (args, io) => {
    const named = [...(list(args.models) ?? []), ...(list(args.select) ?? [])];
    const summary = await shownTo(io, await engine.transform({
      targets: named.length ? named : null,
      force: Boolean(args.force),
      fullRefresh: Boolean(args['full-refresh']),
      trigger: 'cli',
      onModel: (r, done, total) => io.progress(`[${done}/${total}] ${r.status.padEnd(15)} ${r.model} (${r.duration_ms} ms)`),
    }));
    if (io.wantsJson) io.json(summary);
    else {
      io.table(
        summary.results.map((r) => ({ model: r.model, status: r.status, duration_ms: r.duration_ms, error: r.error ?? '' })),
        ['model', 'status', 'duration_ms', 'error'],
      );
      const count = (s: string) => summary.results.filter((r) => r.status === s).length;
      io.out(
        `transform ${summary.status}: ${count('built')} built, ${count('skipped')} skipped, ${count('error')} error, ${count('upstream_failed')} upstream_failed, ${count('assertion_failed')} assertion_failed in ${summary.duration_ms} ms`,
      );
    }
    return summary.status === 'success' ? 0 : 1;
  });

  ctx.command('seed', async (args, io) => {
    const results = await shownTo(io, await engine.loadSeeds({
      force: Boolean(args.force),
      schema: args.schema === undefined ? undefined : String(args.schema),
      targets: list(args.select),
      onSeed: (r, done, total) => io.progress(`[${done}/${total}] ${r.status.padEnd(8)} ${r.seed}`),
    }));
    if (io.wantsJson) io.json(results);
    else if (results.length === 0) io.out('No seeds/*.csv files');
    else io.table(results.map((r) => ({ seed: r.seed, status: r.status, rows: r.rows ?? '', error: r.error ?? '' })), ['seed', 'status', 'rows', 'error']);
    return results.some((r) => r.status === 'error') ? 1 : 0;
  });

  ctx.command('check', async (_args, io) => {
    const report = await shownTo(io, await (await import('./check.js')).runCheck(ctx, engine));
    if (io.wantsJson) io.json(report);
    else printCheck(report, io);
    return report.exit_code;
  });

  ctx.command('test', async (args, io) => {
    const report = await (await import('./unit-tests.js')).runUnitTests(ctx, engine, { model: args.model ? String(args.model) : null, names: list(args.name) });
    if (io.wantsJson) io.json(report);
    else {
      for (const r of report.results) io.out(`${r.status === 'pass' ? 'PASS ' : r.status === 'fail' ? 'FAIL ' : 'ERROR'} ${r.name} (${r.model}) ${r.duration_ms} ms`);
      printUnitFailures(report, io);
      io.out(`${report.passed} passed, ${report.failed} failed, ${report.errors} errors${report.file_errors.length ? `, ${report.file_errors.length} unreadable files` : ''}`);
    }
    return report.failed + report.errors + report.file_errors.length > 0 ? 1 : 0;
  });

  ctx.command('validate', async (_args, io) => {
    const report = await (await import('./edit-loop.js')).validateProject(engine, await engine.extensions.validatorsLoaded());
    if (io.wantsJson) io.json(report);
    else {
      for (const p of report.problems) io.out(`${p.file}${p.line ? `:${p.line}` : ''}: ${p.message}`);
      io.out(report.valid ? 'valid: no problems found' : `${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}`);
    }
    return report.valid ? 0 : 1;
  });

  ctx.command('status', async (_args, io) => {
    const report = await (await import('./edit-loop.js')).projectStatus(ctx, engine);
    if (io.wantsJson) io.json(report);
    else {
      io.table(report.seeds.map((s) => ({ seed: s.seed, status: s.status, path: s.path })), ['seed', 'status', 'path']);
      io.table(report.models.map((m) => ({ model: m.model, status: m.status, reason: m.reason ?? '', path: m.path })), ['model', 'status', 'reason', 'path']);
      const pending = report.models.filter((m) => m.status !== 'up_to_date').length + report.seeds.filter((s) => s.status !== 'up_to_date').length;
      io.out(pending ? `${pending} to build (dp seed && dp transform)` : 'everything is up to date');
    }
    return 0;
  });

  ctx.command('watch', async (_args, io) => {
    const watcher = (await import('./edit-loop.js')).watchProject(ctx, engine, (round) => {
      const what = [...round.seeds.map((s) => `seeds/${s}.csv`), ...round.changed].join(', ');
      if (round.error) io.out(`error after change to ${what}: ${round.error}`);
      else if (round.summary) {
        for (const r of round.summary.results) io.out(`  ${r.status.padEnd(15)} ${r.model} (${r.duration_ms} ms)${r.error ? `: ${r.error}` : ''}`);
        const built = round.summary.results.filter((r) => r.status === 'built').length;
        io.out(`${round.summary.status === 'success' ? 'ok' : 'FAILED'}: ${what} → ${built} built in ${round.duration_ms} ms`);
      } else io.out(`reloaded ${what} in ${round.duration_ms} ms`);
    });
    await watcher.ready;
    io.out(`watching transform/ and seeds/ (Ctrl-C stops)`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      ctx.signal.addEventListener('abort', stop);
    });
    watcher.close();
    return 0;
  });

  ctx.command('init', async (args, io) => {
    const { initTarget, scaffoldProject } = await import('./edit-loop.js');
    const made = scaffoldProject(initTarget(args.folder));
    if (io.wantsJson) io.json({ path: made.path, files: made.files });
    else {
      io.out(`Created ${made.files.length} files in ${String(args.folder)}:`);
      for (const f of made.files) io.out(`  ${f}`);
      const dp = dpCommand();
      io.out(`\nNext: cd ${String(args.folder)} && ${dp} seed && ${dp} transform && ${dp} test`);
    }
    return 0;
  });

  ctx.command('diff', async (args, io) => {
    const result = await (await import('./diff.js')).runDiff(ctx, engine, {
      targets: list(args.select),
      against: args.against ? String(args.against) : null,
      target_schema: args['target-schema'] ? String(args['target-schema']) : null,
      against_db: args['against-db'] ? String(args['against-db']) : null,
      full: Boolean(args.full) || Boolean(args.markdown),
    });
    if (io.wantsJson) io.json(result);
    else if (args.markdown) io.out((await import('./diff.js')).diffMarkdown(result).trimEnd());
    else if (result.models.length === 0) io.out(result.against ? `No model files differ from ${result.against}` : 'No models');
    else {
      io.table(
        result.models.map((d) => ({
          model: d.model,
          status: d.status,
          rows_before: d.rows_before ?? '',
          rows_after: d.rows_after ?? '',
          added: d.added ?? '',
          removed: d.removed ?? '',
          modified: d.modified ?? (d.key ? 0 : 'n/a'),
          schema_change: d.schema_change
            ? [...d.schema_change.added.map((c) => `+${c.name}`), ...d.schema_change.removed.map((c) => `-${c.name}`), ...d.schema_change.type_changed.map((c) => `~${c.name}`)].join(' ')
            : '',
          error: d.error ?? '',
        })),
      );
    }
    return result.models.some((d) => d.status === 'error') ? 1 : 0;
  });

  ctx.command('lint', async (args, io) => {
    const report = await (await import('./lint.js')).runLint(ctx, engine, { fix: Boolean(args.fix) });
    if (io.wantsJson) io.json(report);
    else {
      for (const f of report.fixed) io.out(`fixed ${f}`);
      for (const e of report.fix_errors) io.err(`could not format ${e.file}: ${e.error}`);
      for (const f of report.findings) io.out(`${f.file}:${f.line}: [${f.rule}] ${f.message}`);
      io.out(`${report.findings.length} finding${report.findings.length === 1 ? '' : 's'} in ${report.files} file${report.files === 1 ? '' : 's'}`);
    }
    return report.findings.length ? 1 : 0;
  });

  ctx.command('promote', async (args, io) => {
    const r = await (await import('./promote.js')).promote(ctx, engine, {
      input: String(args.input),
      name: String(args.name),
      schema: String(args.schema),
      materialized: args.materialized ? String(args.materialized) : undefined,
      force: Boolean(args.force),
      insideProjectOnly: io.caller?.authenticated === true,
    });
    if (io.wantsJson) io.json(r);
    else io.out(`Wrote ${r.path} (${r.model}) from ${r.from}`);
    return 0;
  });

  ctx.command('debug', async (args, io) => {
    const r = await (await import('./promote.js')).debugNotebook(ctx, engine, String(args.model));
    if (io.wantsJson) io.json(r);
    else io.out(`Wrote ${r.path} (${r.cells.length} cells)`);
    return 0;
  });
}
