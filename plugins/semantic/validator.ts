/**
 * The semantic plugin's part of `dp validate` (PROJECT_VALIDATORS): every metric definition that
 * does not load, and every metric that reads a relation the project does not define (no model,
 * seed or declared source of that name), without building anything.
 */
import type { DatabasePort, ModelsService, ProjectInfo, ProjectProblem, ProjectValidator } from '../../sdk/index.js';
import { loadMetrics } from './metrics.js';

export function metricsValidator(project: ProjectInfo, db: DatabasePort, models: () => ModelsService): ProjectValidator {
  return {
    name: 'semantic',
    async validate(): Promise<ProjectProblem[]> {
      const { metrics, errors } = await loadMetrics(project, db);
      const problems: ProjectProblem[] = errors.map((e) => ({
        file: e.file,
        ...(e.line ? { line: e.line } : {}),
        message: e.metric ? `metric '${e.metric}': ${e.reason}` : e.index !== undefined ? `metrics entry ${e.index + 1}: ${e.reason}` : e.reason,
      }));
      const service = models();
      const known = new Set<string>();
      for (const m of await service.list()) known.add(m.full_name.toLowerCase());
      for (const s of await service.seeds()) known.add(s.full_name.toLowerCase());
      for (const src of service.sources()) for (const t of src.tables) known.add(`${src.schema}.${t.name}`.toLowerCase());
      for (const m of metrics) {
        if (!known.has(m.model.toLowerCase())) {
          problems.push({ file: m.file, message: `metric '${m.name}' reads '${m.model}', which is not a model, seed or declared source of this project` });
        }
      }
      return problems;
    },
  };
}
