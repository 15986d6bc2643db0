/**
 * The streams plugin's part of `dp validate` (PROJECT_VALIDATORS): every stream's schedule is a
 * 5-field cron expression and every step target names a script, seed or model that exists.
 * Nothing runs; each problem names its line of project.yml (the live config's lineOf).
 */
import { cronProblem, errorMessage, type PluginContext, type ProjectProblem, type StreamDefinition } from '../../sdk/index.js';

/** What validation reads of the stream runner (streams.ts, which calls this with itself). */
export interface ValidatedStreams {
  list(): StreamDefinition[];
  targetProblems(def: StreamDefinition): Promise<Array<{ step: number; message: string }>>;
}

export async function streamProblems(ctx: PluginContext, streams: ValidatedStreams): Promise<ProjectProblem[]> {
  const file = 'project.yml';
  const problems: ProjectProblem[] = [];
  const at = (parts: Array<string | number>, message: string) => {
    const line = ctx.config.lineOf(parts);
    problems.push({ file, ...(line ? { line } : {}), message });
  };
  for (const def of streams.list()) {
    if (def.schedule !== null) {
      const p = cronProblem(def.schedule);
      if (p) at(['streams', def.name, 'schedule'], `streams.${def.name}.schedule: ${p}`);
    }
    try {
      for (const p of await streams.targetProblems(def)) at(['streams', def.name, 'steps', p.step], p.message);
    } catch (e) {
      // Models that do not load (a cycle, a duplicate) are the models validator's to report.
      at(['streams', def.name], `streams.${def.name}: targets not checked: ${errorMessage(e)}`);
    }
  }
  return problems;
}
