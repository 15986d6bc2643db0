/** The `models` service: discovery + graph (cached by file contents) and the run entry points. */
import {
  badRequest,
  type DagEdge,
  type DagNode,
  type ModelInfo,
  type ModelsService,
  type PluginContext,
  type SeedInfo,
  type SeedLoadResult,
  type SourceConfig,
  type TransformSummary,
  type WarehouseTargetService,
} from '../../sdk/index.js';
import type { CheckReport } from './check.js';
import { SOURCES_CONFIG } from './config.js';
import { ModelExtensions } from './extensions.js';
import { buildGraph, dagOf, findModel, type ModelGraph } from './dag.js';
import { Discovery, type ModelFile } from './discovery.js';
import { activeTarget } from './on-target.js';
import { loadSeeds, type SeedOptions } from './seeds.js';
import { recentRuns } from './state.js';
import { transformOnTarget } from './target-run.js';
import { runTransform, type TransformOptions } from './transform.js';

export class ModelsEngine implements ModelsService {
  readonly discovery: Discovery;
  /** What other plugins contributed through models.checks and models.view. */
  readonly extensions = new ModelExtensions();
  private cached: { signature: string; graph: ModelGraph } | null = null;
  constructor(readonly ctx: PluginContext) {
    this.discovery = new Discovery(ctx);
  }

  sources(): SourceConfig[] {
    return this.ctx.config(SOURCES_CONFIG).map((s) => ({ ...s, schema: s.schema ?? s.name }));
  }

  /** The validated graph; throws DpError (naming files) on duplicates, unknown references and cycles. */
  async graph(): Promise<ModelGraph> {
    return this.graphOf(await this.discovery.modelFiles());
  }

  /** The graph of these model files (see graph()). */
  async graphOf(files: ModelFile[], options: { ignoreConfigProblems?: boolean } = {}): Promise<ModelGraph> {
    const problems = options.ignoreConfigProblems ? [] : files.flatMap((f) => f.configProblems.map((p) => ({ file: f.path, line: p.line ?? 1, code: p.code, message: p.message })));
    if (problems.length) {
      throw badRequest(problems[0].code, problems.map((p) => `${p.file}:${p.line}: ${p.message}`).join('; '), { problems });
    }
    const seeds = this.discovery.seedFiles();
    const sources = this.sources();
    const signature = JSON.stringify([files.map((f) => [f.path, f.content_hash]), seeds.map((s) => s.full_name), sources]);
    if (this.cached?.signature === signature) return this.cached.graph;
    const graph = await buildGraph({
      files,
      seeds,
      sources,
      existingRelations: async () => {
        // Every relation a model can name, the engine's own catalog views included.
        const { columns } = await this.ctx.db.catalog.resolvableColumns();
        return new Set(columns.map((c) => `${c.schema}.${c.table}`.toLowerCase()));
      },
    });
    this.cached = { signature, graph };
    return graph;
  }

  async list(): Promise<ModelInfo[]> {
    return (await this.graph()).models.map((m) => m.info);
  }

  async get(name: string): Promise<ModelInfo | undefined> {
    return findModel(await this.graph(), name)?.info;
  }

  async seeds(): Promise<SeedInfo[]> {
    return this.discovery.seedFiles().map(({ name, schema, full_name, path, content_hash }) => ({ name, schema, full_name, path, content_hash }));
  }

  async dag(): Promise<{ nodes: DagNode[]; edges: DagEdge[] }> {
    return dagOf(await this.graph());
  }

  async check(): Promise<CheckReport> {
    return (await import('./check.js')).runCheck(this.ctx, this);
  }

  transform(options: TransformOptions): Promise<TransformSummary> {
    const target = this.warehouseTarget();
    if (target) return this.exclusive(async () => transformOnTarget(this.ctx, target, await this.list(), options, await this.invalidModels()));
    return this.exclusive(async () => runTransform(this.ctx, await this.graph(), options));
  }

  loadSeeds(options: SeedOptions): Promise<SeedLoadResult[]> {
    const target = this.warehouseTarget();
    if (target) return this.exclusive(async () => target.loadSeeds(await this.seeds(), options));
    return this.exclusive(() => loadSeeds(this.ctx, this.discovery, options));
  }

  /** Models whose SQL discovery refused, with the error naming the file (a target builds none of them). */
  private async invalidModels(): Promise<Map<string, string>> {
    const broken = (await this.discovery.modelFiles()).filter((f) => f.parseError);
    return new Map(broken.map((f) => [f.full_name.toLowerCase(), `${f.path}${f.parseErrorLine ? `:${f.parseErrorLine}` : ''}: ${f.parseError}`]));
  }

  private warehouseTarget(): WarehouseTargetService | null {
    return activeTarget(this.ctx);
  }

  /** The latest transform runs, newest first. */
  runs(limit = 20): Promise<Array<Record<string, unknown>>> {
    return recentRuns(this.ctx, limit);
  }

  /** Runs that write the warehouse take the kernel's write lock: they wait for each other and for ingest, sync and restore. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.ctx.db.exclusive(fn);
  }
}
