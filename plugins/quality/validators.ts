/** The quality plugin's parts of `dp validate`: contracts and inline assertions. */
import fs from 'node:fs';
import { PROJECT_VALIDATORS, readYaml, type ModelInfo, type PluginContext } from '../../sdk/index.js';
import { parseAssertion } from './assertions.js';
import { loadContracts } from './contracts.js';
import { modelsService } from './relations.js';

/** Registers both validators on PROJECT_VALIDATORS. */
export function extendValidators(ctx: PluginContext): void {
  // dp validate: unreadable contract files and entries, and contracts naming a model that does not exist.
  ctx.extend(PROJECT_VALIDATORS, {
    name: 'contracts',
    async validate() {
      const { contracts, errors } = loadContracts(ctx);
      const lineOf = (file: string, index?: number): number | undefined => {
        try {
          return readYaml(fs.readFileSync(ctx.project.resolve(file), 'utf8'), file).lineOf(index === undefined ? [] : ['contracts', index]);
        } catch {
          return undefined;
        }
      };
      const problems = errors.map((e) => {
        const line = /at line (\d+)/.exec(e.reason)?.[1];
        return { file: e.file, line: line ? Number(line) : lineOf(e.file, e.index), message: e.reason };
      });
      const models = modelsService(ctx);
      if (models) {
        for (const c of contracts) {
          let known: boolean;
          try {
            known = Boolean(await models.get(c.model));
          } catch {
            continue; // the models' own problems are reported by the models plugin
          }
          if (!known) {
            const index = contracts.filter((x) => x.file === c.file).indexOf(c);
            problems.push({ file: c.file, line: lineOf(c.file, index), message: `contract '${c.name}' names model '${c.model}', which does not exist` });
          }
        }
      }
      return problems;
    },
  });
  // dp validate: every @assert parsed the way the build will evaluate it (a mistake shows before a transform).
  ctx.extend(PROJECT_VALIDATORS, {
    name: 'assertions',
    async validate() {
      const models = modelsService(ctx);
      let list: ModelInfo[];
      try {
        list = models ? await models.list() : [];
      } catch {
        return []; // the models' own problems are reported by the models plugin
      }
      const problems: Array<{ file: string; line?: number; message: string }> = [];
      for (const m of list) {
        for (const expression of m.assertions) {
          const parsed = await parseAssertion(ctx, expression);
          if (!parsed.error) continue;
          const line = m.sql.split('\n').findIndex((l) => l.includes(expression));
          problems.push({ file: m.path, ...(line >= 0 ? { line: line + 1 } : {}), message: `@assert ${expression}: ${parsed.error}` });
        }
      }
      return problems;
    },
  });
}
