/**
 * The streams plugin's part of `dp validate` (PROJECT_VALIDATORS): every stream's schedule is a
 * 5-field cron expression and every step target names a script, seed or model that exists.
 * Nothing runs; each problem names its line of project.yml.
 */
import fs from 'node:fs';
import { cronProblem, errorMessage, readYaml, type PluginContext, type ProjectProblem } from '../../sdk/index.js';
import type { StreamRunner } from './streams.js';

export async function streamProblems(ctx: PluginContext, streams: StreamRunner): Promise<ProjectProblem[]> {
  {
    {
      const file = 'project.yml';
      let lineOf: (parts: Array<string | number>) => number | undefined = () => undefined;
      try {
        lineOf = readYaml(fs.readFileSync(ctx.project.resolve(file), 'utf8'), file).lineOf;
      } catch {
        // The kernel reports a broken project.yml itself; problems are listed without lines.
      }
      const problems: ProjectProblem[] = [];
      const at = (parts: Array<string | number>, message: string) => {
        const line = lineOf(parts);
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
  }
}
