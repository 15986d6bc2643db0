/**
 * The models plugin's extension points: `models.checks` (what `dp check` runs beyond validating
 * the models: the quality plugin's assertions and contracts) and `models.view` (sections of a
 * model's view: the lineage plugin's column lineage) and `models.validators` (what `dp validate`
 * adds). Dependencies point one way: those plugins extend models; models never looks them up.
 * The view and the validators are read by a route or `dp validate` only, so they are on-demand
 * points: a one-shot command (`dp transform`) does not load lineage, streams, semantic and what
 * they act through (scripts, connectors) for them; their first read does (`sectionsLoaded`,
 * `validatorsLoaded`).
 */
import { DpError, MODEL_CHECKS, MODEL_VIEW, PROJECT_VALIDATORS, type ContractRunResult, type ModelChecker, type ModelViewSection, type PluginContext, type ProjectValidator } from '../../sdk/index.js';

export class ModelExtensions {
  readonly checkers: ModelChecker[] = [];
  private readonly sections = new Map<string, ModelViewSection>();
  /** What `dp validate` runs beyond the models' own checks (contracts, metrics, streams). */
  private readonly validators: ProjectValidator[] = [];
  private ctx: PluginContext | null = null;

  /** The contributed model view sections, their plugins loaded first. */
  async sectionsLoaded(): Promise<ReadonlyMap<string, ModelViewSection>> {
    await this.ctx?.loadExtensions(MODEL_VIEW);
    return this.sections;
  }

  /** The contributed project validators, their plugins loaded first. */
  async validatorsLoaded(): Promise<readonly ProjectValidator[]> {
    await this.ctx?.loadExtensions(PROJECT_VALIDATORS);
    return this.validators;
  }

  offer(ctx: PluginContext): void {
    this.ctx = ctx;
    ctx.provideExtensionPoint(PROJECT_VALIDATORS, (validator) => {
      this.validators.push(validator);
    });
    ctx.provideExtensionPoint(MODEL_CHECKS, (checker) => {
      this.checkers.push(checker);
    });
    ctx.provideExtensionPoint(MODEL_VIEW, (section, fromPlugin) => {
      if (this.sections.has(section.section)) {
        throw new DpError(500, 'duplicate_model_view_section', `models.view section '${section.section}' is contributed twice (the second time by plugin '${fromPlugin}')`);
      }
      this.sections.set(section.section, section);
    });
  }

  /** Every contributed checker as one (undefined when none: the quality plugin is disabled or absent). */
  checker(): Omit<ModelChecker, 'name'> | undefined {
    const all = this.checkers;
    if (all.length === 0) return undefined;
    if (all.length === 1) return all[0];
    return {
      evaluateAssertions: async (relation, expressions) => (await Promise.all(all.map((c) => c.evaluateAssertions(relation, expressions)))).flat(),
      runContracts: async (filter) => {
        const runs: ContractRunResult[] = [];
        for (const c of all) runs.push(await c.runContracts(filter));
        return {
          total: runs.reduce((n, r) => n + r.total, 0),
          passed: runs.reduce((n, r) => n + r.passed, 0),
          failed: runs.reduce((n, r) => n + r.failed, 0),
          results: runs.flatMap((r) => r.results),
        };
      },
    };
  }
}
