/**
 * The masking plugin: column masking enforced on every user query (docs/decisions.md "Masking policy").
 * Policies live in _service.masking_policies; methods come from the built-in catalog and the
 * `masking.methods` extension point; enforcement is a rewrite of DuckDB's parse tree on the
 * kernel's beforeQuery hook; the masking SQL commands are answered on interceptQuery.
 */
import { AGENT_CONTEXT, CATALOG_CHANGED, definePlugin, LINEAGE_SERVICE, MASKING_METHODS, MASKING_SERVICE, MODEL_END, TRANSFORM_END, VALUES_HIDDEN_FROM, type MaskingService } from '../../sdk/index.js';
import { MethodCatalog } from './catalog.js';
import { registerCommands } from './commands.js';
import { MASKING_CONFIG } from './config.js';
import { EnforcementGate } from './gate.js';
import { MaskKeys } from './keys.js';
import { MIGRATIONS, PolicyStore } from './policies.js';
import { registerPreviewRoute } from './preview.js';
import { registerRoutes } from './routes.js';
import { interceptMaskingCommand } from './sql-commands.js';


export default definePlugin({
  config: [MASKING_CONFIG],
  setup(ctx) {
    const keys = new MaskKeys();
    keys.attach(ctx.secrets, (m) => ctx.log.warn(m));
    const catalog = new MethodCatalog(keys);
    ctx.provideExtensionPoint(MASKING_METHODS, (contribution, fromPlugin) => {
      for (const method of Array.isArray(contribution) ? contribution : [contribution]) catalog.register(method, fromPlugin);
    });
    ctx.migrate(MIGRATIONS);

    const store = new PolicyStore(() => ctx.db, catalog);
    const settings = () => ({ enforceWithoutAuth: ctx.config(MASKING_CONFIG).enforce_without_auth });
    // Lineage is optional: without it policies apply by column name only. It is looked up (and
    // in a one-shot command loaded: plugin.json onDemand) only once a policy exists to follow.
    // The enforcer itself is imported once a policy exists (gate.ts); the key schema is refused always.
    const lineage = () => ctx.services.load(LINEAGE_SERVICE);
    const enforcement = new EnforcementGate(ctx.db, store, async (keySchema) => new (await import('./enforce.js')).MaskingEnforcer(ctx, catalog, store, settings, ctx.log, lineage, keySchema));
    const derived = () => enforcement.derived();

    ctx.onStart(async () => {
      // The project key (in .env) and the key table come first: every keyed mask reads them.
      try {
        await keys.load(ctx.db);
      } catch (e) {
        // A database that cannot be written (read-only open) keeps working; keyed masks then fail closed.
        ctx.log.warn(`masking: could not create the key table (${(e as Error).message})`);
      }
      enforcement.forgetAll();
      await store.load();
      // A server with policies has the enforcer ready before its first query; a one-shot command imports it when a query needs it.
      if (ctx.serving) await enforcement.prepare();
    });
    // Masking listens to these events only: the kernel's CATALOG_CHANGED after every statement
    // that may change the catalog, and the models plugin's MODEL_END and TRANSFORM_END, after
    // which a table's columns may be computed from other columns (derived masks follow). Progress
    // events (starts, stream steps, output) change nothing masked. Each re-reads on the next query.
    const forgetCatalog = () => enforcement.forgetCatalog();
    ctx.events.on(CATALOG_CHANGED, forgetCatalog);
    ctx.events.on(MODEL_END, forgetCatalog);
    ctx.events.on(TRANSFORM_END, forgetCatalog);

    ctx.tap('interceptQuery', async (q) => interceptMaskingCommand(q, store));
    ctx.tap('beforeQuery', async (q) => enforcement.beforeQuery(q));
    ctx.tap(VALUES_HIDDEN_FROM, async (caller) => (await enforcement.maskedColumnNames(caller)).length > 0);

    const service: MaskingService & { derivations(): number; enforcerLoaded(): boolean } = {
      maskedColumns: (caller, schema, table) => enforcement.maskedColumns(caller, schema, table),
      maskedColumnNames: (caller) => enforcement.maskedColumnNames(caller),
      // How many times policies were derived from lineage (tests: queries alone never derive).
      derivations: () => enforcement.derivations,
      // Whether the enforcer's code was imported (tests: a project without policies never imports it).
      enforcerLoaded: () => enforcement.loaded,
    };
    ctx.services.provide(MASKING_SERVICE, service);
    // dp context: the policies in words (the module loads when the section is written).
    ctx.extend(AGENT_CONTEXT, { section: { title: 'Masking', order: 20, write: async () => ({ lines: await (await import('./context-section.js')).maskingInWords(ctx) }) } });

    registerRoutes(ctx, store, catalog, derived);
    registerPreviewRoute(ctx);
    registerCommands(ctx, store, derived, catalog);
  },
});
