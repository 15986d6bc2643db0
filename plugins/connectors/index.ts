/**
 * The connectors plugin: the CONNECTOR_TYPES extension point and the built-in types (postgres,
 * mysql, csv, webhook), setup (script; connection, connector and sync stream through the live config; .env), CDC syncs with their state in
 * `_service.cdc_state`, the webhook inbox and file import. index.ts only wires.
 */
import { CONNECTOR_TYPES, definePlugin, SCRIPT_CONTEXT, STREAMS_SERVICE, TABLE_SYNCED, TABLES_RESTORED } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { CONNECTORS_CONFIG } from './config.js';
import { ImportService } from './import.js';
import { TypeRegistry } from './registry.js';
import { registerRoutes } from './routes.js';
import { ConnectorsService } from './service.js';
import { ConnectorSettings } from './settings.js';
import { CdcStateStore, MIGRATIONS } from './state.js';
import { scheduleJob, scriptContext } from './scripts.js';
import { IMPORTS_SCRATCH, sweepScratch, SYNC_SCRATCH } from './scratch.js';
import { SyncEngine, targetTableName } from './sync.js';
import { csvType } from './types/csv.js';
import { mysqlType } from './types/mysql.js';
import { postgresType } from './types/postgres.js';
import { webhookType } from './types/webhook.js';
import { WebhookInbox } from './webhook.js';

export const BUILT_IN_TYPES = [postgresType, mysqlType, csvType, webhookType];

export default definePlugin({
  config: [CONNECTORS_CONFIG],
  setup(ctx) {
    const registry = new TypeRegistry();
    for (const t of BUILT_IN_TYPES) registry.register(t, ctx.manifest.name);
    ctx.provideExtensionPoint(CONNECTOR_TYPES, (contribution, fromPlugin) => {
      for (const t of Array.isArray(contribution) ? contribution : [contribution]) registry.register(t, fromPlugin);
    });
    ctx.migrate(MIGRATIONS);

    const settings = new ConnectorSettings(ctx.config, (name) => ctx.secrets.get(name));
    const state = new CdcStateStore(() => ctx.db);
    const engine = new SyncEngine(ctx, registry, settings, state, ctx.hook(TABLE_SYNCED), ctx.log);
    const inbox = new WebhookInbox(() => ctx.db);
    const imports = new ImportService(ctx);
    const service = new ConnectorsService(
      ctx,
      registry,
      settings,
      state,
      engine,
      async (c) => {
        if (c.type === 'webhook') await inbox.ensure(c.name);
      },
      // The sync stream a setup adds (or a remove drops) is defined through the streams service.
      () => ctx.services.find(STREAMS_SERVICE),
    );

    // With the scripts plugin: generated scripts call ctx.connectors.sync(name) (a no-op when
    // scripts is disabled). Connector schedules run on the kernel's scheduler.
    ctx.extend(SCRIPT_CONTEXT, scriptContext(engine));
    if (ctx.serving) ctx.scheduler.schedule(scheduleJob(() => settings.connectors().values(), engine, ctx.log));

    // Import uploads and sync pipes a killed process left behind.
    ctx.onStart(() => {
      const removed = [IMPORTS_SCRATCH, SYNC_SCRATCH].flatMap((dir) => sweepScratch(ctx.project.resolve(dir)));
      if (removed.length) ctx.log.info('scratch files of killed imports and syncs removed', { files: removed.length });
    });

    // A restored table holds older rows than its sync state describes: the state is reset, so the
    // next sync reloads the table whole instead of skipping the gap after the watermark.
    ctx.tap(TABLES_RESTORED, async (restore) => {
      const restored = new Set(restore.tables.map((t) => t.toLowerCase()));
      for (const c of settings.connectors().values()) {
        for (const t of c.tables) {
          const target = `${c.target_schema}.${targetTableName(t.name)}`;
          if (!restored.has(target.toLowerCase())) continue;
          if ((await state.reset(c.name, t.name)) === 0) continue;
          restore.notes.push({
            table: target,
            plugin: ctx.manifest.name,
            message: `sync state of connector '${c.name}' (table ${t.name}) reset: its next sync reloads the table from the source instead of continuing after the watermark of the replaced rows`,
          });
        }
      }
    });

    registerRoutes(ctx, service, inbox, imports);
    registerCommands(ctx, service);
  },
});
