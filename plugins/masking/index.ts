/**
 * The masking plugin: column masking enforced on every user query (SPEC.md "Masking policy").
 * Policies live in _service.masking_policies; methods come from the built-in catalog and the
 * `masking.methods` extension point; enforcement is a rewrite of DuckDB's parse tree on the
 * kernel's beforeQuery hook; the masking SQL commands are answered on interceptQuery.
 */
import { definePlugin, MASKING_METHODS, MASKING_SERVICE, type MaskingService } from '../../sdk/index.js';
import { MethodCatalog } from './catalog.js';
import { registerCommands } from './commands.js';
import { MASKING_CONFIG } from './config.js';
import { MaskingEnforcer } from './enforce.js';
import { MIGRATIONS, PolicyStore } from './policies.js';
import { registerRoutes } from './routes.js';
import { interceptMaskingCommand } from './sql-commands.js';

export default definePlugin({
  config: [MASKING_CONFIG],
  setup(ctx) {
    const catalog = new MethodCatalog();
    ctx.provideExtensionPoint(MASKING_METHODS, (contribution, fromPlugin) => {
      for (const method of Array.isArray(contribution) ? contribution : [contribution]) catalog.register(method, fromPlugin);
    });
    ctx.migrate(MIGRATIONS);

    const store = new PolicyStore(() => ctx.db, catalog);
    const settings = () => ({ enforceWithoutAuth: ctx.config(MASKING_CONFIG).enforce_without_auth });
    const enforcer = new MaskingEnforcer(ctx, catalog, store, settings, ctx.log);

    ctx.onStart(async () => {
      enforcer.relations.invalidate();
      enforcer.invalidate();
      await store.load();
    });
    // Model builds, seed loads and syncs change tables: re-read the catalog on the next query.
    ctx.events.on('*', () => {
      enforcer.relations.invalidate();
    });

    ctx.tap('interceptQuery', async (q) => interceptMaskingCommand(q, store));
    ctx.tap('beforeQuery', async (q) => enforcer.beforeQuery(q));

    const service: MaskingService = {
      maskedColumns: (caller, schema, table) => enforcer.maskedColumns(caller, schema, table),
      maskedColumnNames: (caller) => enforcer.maskedColumnNames(caller),
    };
    ctx.services.provide(MASKING_SERVICE, service);

    registerRoutes(ctx, store, catalog);
    registerCommands(ctx, store);
  },
});
