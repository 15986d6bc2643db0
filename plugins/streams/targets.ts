/**
 * The targets of a stream's steps: which script, seed or model each names, and the problems of
 * the ones that do not exist (checked before a run starts, 400 `invalid_stream_target`, and by
 * `dp validate`).
 */
import {
  badRequest,
  errorMessage,
  isDpError,
  SCRIPT_EXTENSIONS,
  walkProjectFiles,
  type ModelsService,
  type PluginContext,
  type ScriptsService,
  type StreamDefinition,
  type StreamStep,
} from '../../sdk/index.js';

/** The models a transform selector names (`name`, `schema.name`, `+name`, `name+`). */
function selectorName(selector: string): string {
  return selector.replace(/^\+/, '').replace(/\+$/, '');
}

export class StreamTargets {
  constructor(
    private readonly ctx: PluginContext,
    private readonly scripts: ScriptsService,
    private readonly models: ModelsService,
  ) {}

  /**
   * The problems of a stream's targets: a script, seed or model a step names that does not
   * exist. Checked before a run starts (400 `invalid_stream_target`, nothing runs) and by `dp validate`.
   */
  async targetProblems(def: StreamDefinition): Promise<Array<{ step: number; message: string }>> {
    const problems: Array<{ step: number; message: string }> = [];
    let modelNames: Set<string> | null = null;
    let seedNames: Set<string> | null = null;
    for (const [i, step] of def.steps.entries()) {
      const where = `streams.${def.name}.steps[${i}] (${step.action})`;
      const problem = (message: string) => problems.push({ step: i, message });
      const all = step.targets.includes('all');
      if (all && step.targets.length > 1) problem(`${where}: 'all' stands alone, not beside other targets`);
      if (all) continue;
      if (step.action === 'ingest' || step.action === 'export') {
        for (const t of step.targets) {
          try {
            this.scriptFor(step.action, t);
          } catch (e) {
            problem(`${where}: ${errorMessage(e)}`);
          }
        }
      } else if (step.action === 'seed') {
        seedNames ??= new Set((await this.models.seeds()).flatMap((s) => [s.name, s.full_name]));
        for (const t of step.targets) if (!seedNames.has(t)) problem(`${where}: no seed '${t}' in seeds/`);
      } else {
        modelNames ??= new Set((await this.models.list()).flatMap((m) => [m.name, m.full_name]));
        for (const t of step.targets) if (!modelNames.has(selectorName(t))) problem(`${where}: no model '${selectorName(t)}'`);
      }
    }
    return problems;
  }

  assertTargets(def: StreamDefinition, problems: Array<{ step: number; message: string }>): void {
    if (problems.length) throw badRequest('invalid_stream_target', problems.map((p) => p.message).join('; '), { stream: def.name, problems: problems.map((p) => p.message) });
  }

  /** The project-relative script a step target names: `events`, `events.ts` or `ingest/events.ts`. */
  scriptFor(folder: 'ingest' | 'export', target: string): string {
    const rel = target.startsWith(`${folder}/`) ? target : `${folder}/${target}`;
    const hasExt = SCRIPT_EXTENSIONS.some((ext) => rel.toLowerCase().endsWith(ext));
    const candidates = hasExt ? [rel] : SCRIPT_EXTENSIONS.map((ext) => `${rel}${ext}`);
    for (const c of candidates) {
      try {
        return this.scripts.locate(c).path;
      } catch (e) {
        if (isDpError(e) && e.code !== 'file_not_found') throw e;
      }
    }
    throw badRequest('invalid_stream_target', `no script '${target}' in ${folder}/ (looked for ${candidates.join(', ')})`, { target, folder });
  }

  scriptsOf(step: StreamStep): string[] {
    const folder = step.action as 'ingest' | 'export';
    if (step.targets.includes('all')) return walkProjectFiles(this.ctx.project, folder, { extensions: [...SCRIPT_EXTENSIONS], recursive: false }).map((e) => e.path);
    return step.targets.map((t) => this.scriptFor(folder, t));
  }
}
