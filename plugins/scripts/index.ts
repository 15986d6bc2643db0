/**
 * The scripts plugin: the script runner other plugins run scripts through (SCRIPTS_SERVICE):
 * TypeScript/JavaScript compiled with esbuild (compile.ts), console and `ctx.log` captured per
 * run, `.dpnb` notebooks cell by cell, under the kernel's write lock; `POST /api/run` and
 * `dp run`. It offers SCRIPT_CONTEXT (fields other plugins add to a script's ctx),
 * NOTEBOOK_CELL_RUNNER (the notebooks plugin's cell rules) and the `scripts.runEnded` hook point
 * (the streams plugin records runs in its history).
 */
import {
  definePlugin,
  errorTextsFor,
  LOCAL_ADMIN,
  NOTEBOOK_CELL_RUNNER,
  SCRIPT_CONTEXT,
  SCRIPT_RUN_ENDED,
  SCRIPTS_SERVICE,
  VALUES_HIDDEN_FROM,
  type Caller,
  type NotebookCellRunner,
  type ScriptContextContribution,
} from '../../sdk/index.js';
import { ScriptRunner } from './runner.js';

/** Keys every script's ctx has; a contribution may not take them. */
const RESERVED_CONTEXT_KEYS = new Set(['db', 'config', 'env', 'secrets', 'log', 'signal']);

export default definePlugin({
  setup(ctx) {
    const contributions: ScriptContextContribution[] = [];
    ctx.provideExtensionPoint(SCRIPT_CONTEXT, (c, from) => {
      if (RESERVED_CONTEXT_KEYS.has(c.key) || contributions.some((x) => x.key === c.key)) {
        throw new Error(`Plugin '${from}' contributes the script ctx field '${c.key}', which is already taken`);
      }
      contributions.push(c);
    });
    const cellRunners: NotebookCellRunner[] = [];
    ctx.provideExtensionPoint(NOTEBOOK_CELL_RUNNER, (runner, from) => {
      if (cellRunners.length > 0) throw new Error(`Plugin '${from}' contributes a second notebook cell runner`);
      cellRunners.push(runner);
    });
    const runEnded = ctx.hook(SCRIPT_RUN_ENDED);
    const scripts = new ScriptRunner(ctx, contributions, cellRunners, (record) => runEnded.promise(record));
    ctx.services.provide(SCRIPTS_SERVICE, scripts);

    // Run results carry error texts: they pass through the sdk's one redaction for the caller.
    const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
    const errorTexts = (req: { caller: Caller }) => errorTextsFor(valuesHidden, req.caller);
    ctx.route({
      method: 'POST',
      url: '/api/run',
      permission: 'execute',
      summary: 'Run an ingest/export script (.ts, .js, .mjs) or a .dpnb notebook under ingest/, export/ or notebooks/',
      schema: {
        body: { type: 'object', required: ['script_path'], additionalProperties: false, properties: { script_path: { type: 'string', minLength: 1 } } },
      },
      handler: async (req) => {
        // The client leaving does not stop the script: a run, once started, ends on its own (or with the server).
        const result = await scripts.run((req.body as { script_path: string }).script_path, { caller: req.caller, trigger: 'api' });
        return (await errorTexts(req)).fields(result);
      },
    });

    ctx.command('run', async (args, io) => {
      const errorTexts = await errorTextsFor(valuesHidden, io.caller ?? LOCAL_ADMIN);
      const target = String(args.path);
      const result = await scripts.run(target, {
        trigger: 'cli',
        // Output shows as it happens (on stderr with --json, so stdout stays one JSON document).
        onOutput: (line) => (io.wantsJson ? io.err(line) : io.out(line)),
      });
      if (io.wantsJson) io.json(errorTexts.fields(result));
      else if (result.status === 'success') io.err(`run ${result.path}: success in ${Math.round(result.duration_ms)} ms`);
      else {
        io.err(`run ${result.path}: ${result.status}: ${errorTexts.text(result.error ?? '')}`);
        if (result.stack) io.err(errorTexts.text(result.stack));
      }
      return result.status === 'success' ? 0 : 1;
    });
  },
});
