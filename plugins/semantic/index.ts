/** The semantic layer: wires the service, routes and CLI (see README.md). */
import { AGENT_CONTEXT, AGENT_MCP, CATALOG_DOCS, definePlugin, MODELS_SERVICE, PROJECT_VALIDATORS, SEMANTIC_SERVICE } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { metricsContextSection } from './context-section.js';
import { metricsDocSection } from './docs-section.js';
import { registerRoutes } from './routes.js';
import { createSemanticService } from './service.js';
import { metricsValidator } from './validator.js';

export default definePlugin({
  setup(ctx) {
    // MCP tools (list_metrics, query_metric), loaded with the first MCP server.
    ctx.extend(AGENT_MCP, { tools: async (kit) => (await import('./mcp-tools.js')).semanticTools(ctx, kit) });
    const service = createSemanticService(ctx);
    ctx.services.provide(SEMANTIC_SERVICE, service);
    registerRoutes(ctx, service);
    registerCommands(ctx, service);
    // The metrics' section of the generated docs (`dp docs`), and their count in the catalog's overview.
    ctx.extend(CATALOG_DOCS, { section: metricsDocSection(service), overviewTotals: async () => ({ metrics: (await service.metrics()).metrics.length }) });
    // Their section of `dp context`.
    ctx.extend(AGENT_CONTEXT, { section: metricsContextSection(service) });
    // `dp validate` lists the metrics' problems with the rest of the project's.
    ctx.extend(PROJECT_VALIDATORS, metricsValidator(ctx.project, ctx.db, () => ctx.services.get(MODELS_SERVICE)));
  },
});
