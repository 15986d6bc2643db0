/**
 * The notebooks plugin's cell runner for pipeline runs (`dp run`, stream steps), contributed to
 * the scripts plugin's NOTEBOOK_CELL_RUNNER: the scripts plugin keeps the pipeline rules
 * (markdown skipped, top to bottom, the first failing cell stops the run, write lock, cancel),
 * and each cell runs as in an interactive session: code/ingest cells see earlier cells'
 * exports, sql cells select from earlier sql cells by id (names.ts) and a named sql cell's rows
 * are a variable of later code cells. SQL runs as written through the run's `db` (a pipeline
 * may write, as before), with the referenced cells added when it only reads.
 */
import { isDpError, isNotebookCellCompileFailure, scriptConsole, scriptConsoleLine, SCRIPTS_SERVICE, type NotebookCellRunner, type PluginContext, WAREHOUSE_TARGET_SERVICE } from '../../sdk/index.js';
import { withReferences } from './names.js';

export function pipelineCellRunner(ctx: PluginContext): NotebookCellRunner {
  // Cells compile through the scripts plugin, one compile path for scripts and cells.
  const scripts = () => ctx.services.get(SCRIPTS_SERVICE);
  return {
    start(path, scriptCtx, push) {
      const values = new Map<number, Record<string, unknown>>();
      const scopeFor = (index: number) => {
        const scope: Record<string, unknown> = {};
        for (const i of [...values.keys()].sort((a, b) => a - b)) if (i < index) Object.assign(scope, values.get(i));
        return scope;
      };
      const cellConsole = scriptConsole((level) => (...args) => push(scriptConsoleLine(level, args)));
      return {
        async runCell(cells, index) {
          const cell = cells[index];
          if (cell.type === 'sql') {
            const withNames = withReferences(cells, index);
            let sql = cell.source;
            if (withNames.references > 0) {
              // Names are added to statements that only read; a write runs as written.
              const reads = await ctx.queries.assertReadOnly(withNames.sql).then(
                () => true,
                () => false,
              );
              if (reads) sql = withNames.sql;
            }
            if (cell.id) values.set(index, { [cell.id]: await scriptCtx.db.all(sql) });
            else await scriptCtx.db.run(sql);
            return;
          }
          const scope = scopeFor(index);
          ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Notebook TypeScript cells');
          let compiled;
          try {
            compiled = await scripts().compileNotebookCell(`${path}#cell${index}`, cell.source, Object.keys(scope));
          } catch (e) {
            if (e instanceof Error || isDpError(e) || !isNotebookCellCompileFailure(e)) throw e;
            const failure = e;
            throw new Error(`${path}#cell${index}${failure.line ? ` line ${failure.line}` : ''}: ${failure.message}`);
          }
          const mod = (await import(compiled.url)) as { default: (dp: unknown) => Promise<{ exports: Record<string, unknown> }> };
          try {
            const result = await mod.default({ console: cellConsole, ctx: scriptCtx, scope });
            values.set(index, result.exports ?? {});
          } catch (e) {
            // The message as thrown; the stack names the cell's own line (`ingest/a.dpnb#cell3:2:7`).
            const stack = scripts().notebookCellStack(e, compiled, `${path}#cell${index}`);
            if (e && typeof e === 'object') throw Object.assign(e, { scriptStack: stack });
            throw Object.assign(new Error(String(e)), { scriptStack: stack });
          }
        },
      };
    },
  };
}
