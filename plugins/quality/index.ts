/**
 * The quality plugin: wiring of hooks, routes, CLI commands and the `quality` service.
 * Each concept lives in its own file (assertions, contracts, profiles, freshness, anomalies, alerts).
 */
import { AGENT_CONTEXT, CATALOG_DOCS, definePlugin, MODEL_CHECKS, QUALITY_SERVICE, type QualityService } from '../../sdk/index.js';
import { contractsContextSection } from './context-section.js';
import { contractsDocSection } from './docs-section.js';
import { AlertDispatcher, type Alert, type AlertRecord } from './alerts.js';
import type { AnomalyReport } from './anomalies.js';
import { evaluateAssertions } from './assertions.js';
import { ALERTS_CONFIG, QUALITY_CONFIG } from './config.js';
import { loadContracts, runContracts } from './contracts.js';
import { profileForCaller } from './profiles.js';
import { BuildRecorder } from './recorder.js';
import { extendValidators } from './validators.js';
import { tapBuildHooks } from './build-hooks.js';
import { registerAssertionCommand, registerAssertionRoutes } from './assertions-api.js';
import { registerContractCommand, registerContractRoutes } from './contracts-api.js';
import { registerProfileCommand, registerProfileRoutes } from './profiles-api.js';
import { registerFreshnessCommand, registerFreshnessRoutes } from './freshness-api.js';
import { registerAnomalyRoutes } from './anomalies-api.js';
import { registerAlertRoutes } from './alerts-api.js';
import { MIGRATIONS } from './migrations.js';
import { STORED_AUDIENCE } from './relations.js';

/** What the plugin offers beyond the sdk's QualityService (tests and the CLI use it). */
export interface QualityPluginService extends QualityService {
  /** Resolves once every queued alert delivery has finished and been recorded. */
  drainAlerts(): Promise<void>;
  /** Resolves once every build seen so far has its build record and profile stored (a transform run awaits its own). */
  drainRecords(): Promise<void>;
  /** Anomaly reports of a transform run (kept for the last runs only). */
  anomalyReports(runId: string): AnomalyReport[] | undefined;
  /** Queues an alert to the configured channels (or the given ones). */
  notify(alert: Alert, channels?: readonly string[]): Promise<AlertRecord[]>;
}

export default definePlugin({
  config: [QUALITY_CONFIG, ALERTS_CONFIG],
  setup(ctx) {
    ctx.migrate(MIGRATIONS);
    const alerts = new AlertDispatcher(ctx);
    const anomalyReports = new Map<string, AnomalyReport[]>();
    const recorder = new BuildRecorder(ctx);

    const service: QualityPluginService = {
      evaluateAssertions: (relationName, expressions) => evaluateAssertions(ctx, relationName, expressions, { audience: STORED_AUDIENCE }),
      runContracts: (filter) => runContracts(ctx, filter),
      contracts: () => loadContracts(ctx),
      profile: async (schema, table, caller) => (await profileForCaller(ctx, schema, table, caller)) as unknown as Record<string, unknown>,
      drainAlerts: () => alerts.drain(),
      drainRecords: () => recorder.drain(),
      anomalyReports: (runId) => anomalyReports.get(runId),
      notify: (alert, channels) => alerts.notify(alert, channels),
    };
    ctx.services.provide(QUALITY_SERVICE, service);
    ctx.extend(MODEL_CHECKS, { name: 'quality', evaluateAssertions: service.evaluateAssertions, runContracts: service.runContracts });
    extendValidators(ctx);
    // The contracts' section of the generated docs (`dp docs`).
    ctx.extend(CATALOG_DOCS, { section: contractsDocSection(service) });
    // Their section of `dp context`.
    ctx.extend(AGENT_CONTEXT, { section: contractsContextSection(service) });

    tapBuildHooks(ctx, alerts, recorder, anomalyReports);

    // A one-shot CLI command exits after stop: builds still being recorded and deliveries still in
    // flight finish first.
    ctx.onStop(async () => {
      await recorder.drain();
      await alerts.drain();
    });

    registerAssertionRoutes(ctx);
    registerContractRoutes(ctx);
    registerProfileRoutes(ctx);
    registerFreshnessRoutes(ctx);
    registerAnomalyRoutes(ctx);
    registerAlertRoutes(ctx, alerts);

    registerContractCommand(ctx);
    registerAssertionCommand(ctx);
    registerProfileCommand(ctx);
    registerFreshnessCommand(ctx, alerts);
  },
});
