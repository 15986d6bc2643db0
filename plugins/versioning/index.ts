/**
 * The versioning plugin: metadata snapshots, Parquet versions (diff, restore, timeline, cleanup)
 * and backups of the database file. This file only wires; see README.md.
 */
import { definePlugin, errorMessage, PIPELINE_END, TABLES_RESTORED } from '../../sdk/index.js';
import { BACKUP_MIGRATIONS, BackupStore } from './backups.js';
import { registerCommands } from './commands.js';
import { VERSIONING_CONFIG } from './config.js';
import { registerRoutes } from './routes.js';
import { SNAPSHOT_MIGRATIONS, SnapshotStore } from './snapshots.js';
import { VERSION_MIGRATIONS, VersionStore } from './versions.js';

export default definePlugin({
  config: [VERSIONING_CONFIG],
  setup(ctx) {
    const config = ctx.config(VERSIONING_CONFIG);
    ctx.migrate([...VERSION_MIGRATIONS, ...SNAPSHOT_MIGRATIONS, ...BACKUP_MIGRATIONS]);
    const versions = new VersionStore(ctx, config.compression, ctx.hook(TABLES_RESTORED));
    const stores = { versions, snapshots: new SnapshotStore(ctx), backups: new BackupStore(ctx, versions) };
    // After a crash or a backup restore, _snapshots/, _backups/ and their records agree again,
    // and no temporary copy of a killed write is left.
    ctx.onStart(async () => {
      await stores.versions.reconcile();
      await stores.backups.sweep();
    });
    registerRoutes(ctx, stores);
    registerCommands(ctx, stores);

    ctx.tap(PIPELINE_END, async (pipeline) => {
      if (!ctx.config(VERSIONING_CONFIG).after_pipeline || pipeline.status !== 'success') return;
      try {
        const v = await stores.versions.create({ trigger: 'pipeline', description: `after pipeline ${pipeline.streamName} (run ${pipeline.runId})` });
        ctx.log.info('version created after a pipeline run', { version_id: v.version_id, stream: pipeline.streamName });
      } catch (e) {
        // A version that fails must not turn a successful run into a failed one.
        ctx.log.error('version after a pipeline run failed', { stream: pipeline.streamName, error: errorMessage(e) });
      }
    });
  },
});
