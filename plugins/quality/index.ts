/**
 * The quality plugin: wiring of hooks, routes, CLI commands and the `quality` service.
 * Each concept lives in its own file (assertions, contracts, profiles, freshness, anomalies, alerts).
 */
import fs from 'node:fs';
import {
  badRequest,
  clientGone,
  definePlugin,
  errorMessage,
  LOCAL_ADMIN,
  MODEL_CHECKS,
  notFound,
  PROJECT_VALIDATORS,
  readYaml,
  QUALITY_SERVICE,
  type AssertionOutcome,
  type ModelInfo,
  type QualityService,
} from '../../sdk/index.js';
import { AlertDispatcher, alertHistory, CHANNELS, type Alert, type AlertRecord, type Channel } from './alerts.js';
import { detectAnomalies, listAnomalies, type AnomalyReport, type AnomalySettings } from './anomalies.js';
import { evaluateAssertions, lastExpressions, listAssertionResults, parseAssertion, recordAssertionResults, StoredOutcomeMasker, summarizeOutcome } from './assertions.js';
import { ALERTS_CONFIG, QUALITY_CONFIG } from './config.js';
import { contractHistory, hasBlockingFailure, loadContracts, runContracts } from './contracts.js';
import { isStaleSource, modelFreshness, sourceFreshness } from './freshness.js';
import { computeStats, profileForCaller, profileHistory } from './profiles.js';
import { BuildRecorder } from './recorder.js';
import { MIGRATIONS } from './migrations.js';
import { contractRunSchema, limitQuery, modelParams } from './route-schemas.js';
import { knownModels, requireRelation } from './known-models.js';
import { printContractRun, printProfile } from './cli-output.js';
import { assertVisible, maskedNamesFor, modelsService, redactQuoted, relationExists, resolveModel, splitRelation, STORED_AUDIENCE, utcNow, visibleTo } from './relations.js';

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

const BUILT = new Set(['built', 'assertion_failed']);
const KEPT_RUNS = 20;

export default definePlugin({
  config: [QUALITY_CONFIG, ALERTS_CONFIG],
  setup(ctx) {
    ctx.migrate(MIGRATIONS);
    const alerts = new AlertDispatcher(ctx);
    const anomalyReports = new Map<string, AnomalyReport[]>();
    /** Assertion failures of a run, sent as one alert when the run ends. */
    const failuresByRun = new Map<string, Array<{ model: string; failed: AssertionOutcome[] }>>();
    const anomalySettings = () => ctx.config(QUALITY_CONFIG).anomaly_detection;
    const recorder = new BuildRecorder(ctx);

    /** Reports of a run's built models: one batched comparison, or model by model when that fails. */
    const anomalyReportsOf = async (runId: string, models: string[], settings: AnomalySettings): Promise<AnomalyReport[]> => {
      try {
        return await detectAnomalies(ctx, runId, models, settings);
      } catch (e) {
        ctx.log.error('anomaly detection of a run failed; comparing model by model', { run_id: runId, error: errorMessage(e) });
      }
      const reports: AnomalyReport[] = [];
      for (const model of models) {
        try {
          reports.push(...(await detectAnomalies(ctx, runId, [model], settings)));
        } catch (e) {
          ctx.log.error('anomaly detection failed', { model, error: errorMessage(e) });
        }
      }
      return reports;
    };

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
    // dp validate: unreadable contract files and entries, and contracts naming a model that does not exist.
    ctx.extend(PROJECT_VALIDATORS, {
      name: 'contracts',
      async validate() {
        const { contracts, errors } = loadContracts(ctx);
        const lineOf = (file: string, index?: number): number | undefined => {
          try {
            return readYaml(fs.readFileSync(ctx.project.resolve(file), 'utf8'), file).lineOf(index === undefined ? [] : ['contracts', index]);
          } catch {
            return undefined;
          }
        };
        const problems = errors.map((e) => {
          const line = /at line (\d+)/.exec(e.reason)?.[1];
          return { file: e.file, line: line ? Number(line) : lineOf(e.file, e.index), message: e.reason };
        });
        const models = modelsService(ctx);
        if (models) {
          for (const c of contracts) {
            let known: boolean;
            try {
              known = Boolean(await models.get(c.model));
            } catch {
              continue; // the models' own problems are reported by the models plugin
            }
            if (!known) {
              const index = contracts.filter((x) => x.file === c.file).indexOf(c);
              problems.push({ file: c.file, line: lineOf(c.file, index), message: `contract '${c.name}' names model '${c.model}', which does not exist` });
            }
          }
        }
        return problems;
      },
    });
    // dp validate: every @assert parsed the way the build will evaluate it (a mistake shows before a transform).
    ctx.extend(PROJECT_VALIDATORS, {
      name: 'assertions',
      async validate() {
        const models = modelsService(ctx);
        let list: ModelInfo[];
        try {
          list = models ? await models.list() : [];
        } catch {
          return []; // the models' own problems are reported by the models plugin
        }
        const problems: Array<{ file: string; line?: number; message: string }> = [];
        for (const m of list) {
          for (const expression of m.assertions) {
            const parsed = await parseAssertion(ctx, expression);
            if (!parsed.error) continue;
            const line = m.sql.split('\n').findIndex((l) => l.includes(expression));
            problems.push({ file: m.path, ...(line >= 0 ? { line: line + 1 } : {}), message: `@assert ${expression}: ${parsed.error}` });
          }
        }
        return problems;
      },
    });

    // ------------------------------------------------------------------ hooks

    ctx.tap('afterModelBuild', async (b) => {
      if (b.status !== 'built') return;
      try {
        const expressions = b.assertions ?? (await modelsService(ctx)?.get(b.model))?.assertions ?? [];
        if (expressions.length) {
          const outcomes = await evaluateAssertions(ctx, `${b.schema}.${b.name}`, expressions, { audience: STORED_AUDIENCE });
          await recordAssertionResults(ctx, b.runId, b.model, outcomes);
          b.extras.assertions = outcomes;
          const failed = outcomes.filter((o) => !o.passed);
          if (failed.length) {
            // docs/decisions.md "Errors" 3: no exception and no rollback, only the flag.
            b.status = 'assertion_failed';
            const list = failuresByRun.get(b.runId) ?? [];
            list.push({ model: b.model, failed });
            failuresByRun.set(b.runId, list);
          }
        }
      } catch (e) {
        b.extras.quality_error = errorMessage(e);
        ctx.log.error('quality checks after a model build failed', { model: b.model, error: errorMessage(e) });
      }
      // Build time and profile are recorded by the recorder's worker, beside the next builds.
      recorder.add({ model: b.model, schema: b.schema, table: b.name, status: b.status, runId: b.runId, builtAt: utcNow(), profile: anomalySettings().enabled });
    });

    ctx.tap('afterTransform', async (run) => {
      await recorder.settled(run.runId);
      const settings = anomalySettings();
      if (settings.enabled) {
        const built = run.results.filter((r) => BUILT.has(r.status)).map((r) => r.model);
        const reports = await anomalyReportsOf(run.runId, built, settings);
        anomalyReports.set(run.runId, reports);
        while (anomalyReports.size > KEPT_RUNS) anomalyReports.delete(anomalyReports.keys().next().value as string);
        const found = reports.flatMap((r) => r.anomalies);
        if (found.length && settings.notify.length) {
          void alerts.notify(
            {
              type: 'anomaly',
              title: `${found.length} anomal${found.length === 1 ? 'y' : 'ies'} after transform ${run.runId}`,
              message: found.map((a) => `${a.model} ${a.metric}${a.column ? `(${a.column})` : ''} = ${a.value}, mean ${a.mean}, z ${a.z_score}`).join('\n'),
              details: { run_id: run.runId, anomalies: found },
            },
            settings.notify,
          );
        }
      }
      const failures = failuresByRun.get(run.runId) ?? [];
      failuresByRun.delete(run.runId);
      if (failures.length) {
        void alerts.notify({
          type: 'assertion_failure',
          title: `Assertions failed on ${failures.length} model${failures.length === 1 ? '' : 's'}`,
          message: failures.flatMap((f) => f.failed.map((o) => `${f.model}: ${o.expression} — ${summarizeOutcome(o)}`)).join('\n'),
          details: { run_id: run.runId, models: failures.map((f) => ({ model: f.model, assertions: f.failed })) },
        });
      }
      if (run.status === 'error') {
        // Build errors quote the values DuckDB failed on; alert history is read by viewers and sent out.
        const bound = (await maskedNamesFor(ctx, STORED_AUDIENCE)).size > 0;
        const failed = run.results.filter((r) => r.status === 'error').map((r) => (bound && r.error ? { ...r, error: redactQuoted(r.error) } : r));
        void alerts.notify({
          type: 'pipeline_failure',
          title: `Transform ${run.runId} failed`,
          message: failed.length ? failed.map((r) => `${r.model}: ${r.error ?? 'error'}`).join('\n') : 'The transform run ended with an error',
          details: { run_id: run.runId, trigger: run.trigger, failed_models: failed },
        });
      } else if (run.status === 'success') {
        void alerts.notify({
          type: 'pipeline_success',
          title: `Transform ${run.runId} succeeded`,
          message: `${run.results.length} model(s) processed`,
          details: { run_id: run.runId, trigger: run.trigger, results: run.results },
        });
      }
    });

    ctx.tap('pipelineEnd', async (p) => {
      if (p.status === 'error') {
        const bound = (await maskedNamesFor(ctx, STORED_AUDIENCE)).size > 0;
        const error = p.error && bound ? redactQuoted(p.error) : p.error;
        void alerts.notify({
          type: 'pipeline_failure',
          title: `Stream ${p.streamName} failed`,
          message: error ?? (p.step ? `Step ${p.step.index + 1} (${p.step.action}) failed` : 'The stream run ended with an error'),
          details: { run_id: p.runId, stream: p.streamName, trigger: p.trigger, step: p.step ?? null, duration_ms: p.durationMs ?? null },
        });
      } else if (p.status === 'success') {
        void alerts.notify({
          type: 'pipeline_success',
          title: `Stream ${p.streamName} succeeded`,
          message: `Finished in ${Math.round((p.durationMs ?? 0) / 100) / 10} s`,
          details: { run_id: p.runId, stream: p.streamName, trigger: p.trigger, duration_ms: p.durationMs ?? null },
        });
      }
    });

    // A one-shot CLI command exits after stop: builds still being recorded and deliveries still in
    // flight finish first.
    ctx.onStop(async () => {
      await recorder.drain();
      await alerts.drain();
    });

    // ------------------------------------------------------------------ routes

    ctx.route<unknown, { limit: number }>({
      method: 'GET',
      url: '/api/assertions',
      permission: 'read',
      summary: 'Recent inline assertion results, newest first',
      tags: ['quality'],
      schema: { querystring: limitQuery(100) },
      handler: async (req) => {
        const results = visibleTo(req.caller, await listAssertionResults(ctx, { limit: req.query.limit ?? 100 }), (r) => r.model);
        const masker = new StoredOutcomeMasker(ctx, req.caller);
        for (const r of results) await masker.mask(r.model, [r]);
        return { results };
      },
    });

    ctx.route<unknown, { limit: number }, { model_name: string }>({
      method: 'GET',
      url: '/api/assertions/:model_name',
      permission: 'read',
      summary: 'Inline assertion results of one model, newest first',
      tags: ['quality'],
      schema: { params: modelParams, querystring: limitQuery(100) },
      handler: async (req) => {
        const rel = await resolveModel(ctx, req.params.model_name);
        assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
        const results = await listAssertionResults(ctx, { model: rel.full, limit: req.query.limit ?? 100 });
        await new StoredOutcomeMasker(ctx, req.caller).mask(rel.full, results);
        return { model: rel.full, results };
      },
    });

    ctx.route<unknown, unknown, { model_name: string }>({
      method: 'GET',
      url: '/api/quality/assertion-debug/:model_name',
      permission: 'read',
      summary: "Re-runs a model's inline assertions now, with full diagnostics and the SQL that lists offending rows",
      tags: ['quality'],
      schema: { params: modelParams },
      handler: async (req) => {
        const rel = await resolveModel(ctx, req.params.model_name);
        assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
        await requireRelation(ctx, rel);
        const expressions = rel.assertions ?? (await lastExpressions(ctx, rel.full));
        const outcomes = await evaluateAssertions(ctx, rel.full, expressions, { audience: req.caller, full: true });
        const failed = outcomes.filter((o) => !o.passed).length;
        return { model: rel.full, total: outcomes.length, passed: outcomes.length - failed, failed, assertions: outcomes };
      },
    });

    ctx.route({
      method: 'GET',
      url: '/api/contracts',
      permission: 'read',
      summary: 'Contracts discovered in contracts/*.yml, and the files or entries that are invalid',
      tags: ['quality'],
      handler: (req) => {
        const loaded = loadContracts(ctx);
        return { ...loaded, contracts: visibleTo(req.caller, loaded.contracts, (c) => c.model) };
      },
    });

    ctx.route<unknown, { contract?: string }>({
      method: 'POST',
      url: '/api/contracts/run',
      permission: 'execute',
      summary: 'Runs every contract (or those of one contract name or model) and records the results',
      tags: ['quality'],
      schema: {
        querystring: { type: 'object', additionalProperties: false, properties: { contract: { type: 'string', minLength: 1, description: 'Contract name or model' } } },
        response: { 200: contractRunSchema },
      },
      handler: async (req) => runContracts(ctx, req.query.contract ?? null),
    });

    ctx.route<unknown, { limit: number; contract?: string }>({
      method: 'GET',
      url: '/api/contracts/history',
      permission: 'read',
      summary: 'Past contract results, newest first',
      tags: ['quality'],
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: 10000, default: 100 }, contract: { type: 'string', minLength: 1, description: 'Contract name or model' } },
        },
      },
      handler: async (req) => {
        const history = visibleTo(req.caller, await contractHistory(ctx, { filter: req.query.contract ?? null, limit: req.query.limit ?? 100 }), (h) => h.model);
        const masker = new StoredOutcomeMasker(ctx, req.caller);
        for (const h of history) if (Array.isArray(h.detail)) await masker.mask(h.model, h.detail as Array<{ expression: string; detail: Record<string, unknown> }>);
        return { history };
      },
    });

    ctx.route({
      method: 'GET',
      url: '/api/profiles',
      permission: 'read',
      summary: 'Column profiles of every model (models never built are listed with status not_built)',
      tags: ['quality'],
      handler: async (req, reply) => {
        const profiles: Array<Record<string, unknown>> = [];
        const gone = clientGone(reply);
        for (const model of visibleTo(req.caller, await knownModels(ctx), (m) => m)) {
          if (gone.aborted) break;
          const { schema, table } = splitRelation(model);
          if (!schema || !(await relationExists(ctx, schema, table))) {
            profiles.push({ model, schema, table, status: 'not_built' });
            continue;
          }
          profiles.push({ model, status: 'ok', ...(await profileForCaller(ctx, schema, table, req.caller, gone)) });
        }
        return { profiles };
      },
    });

    ctx.route<unknown, unknown, { model_name: string }>({
      method: 'GET',
      url: '/api/profiles/:model_name',
      permission: 'read',
      summary: 'Column profile of one model, with its recorded row-count history',
      tags: ['quality'],
      schema: { params: modelParams },
      handler: async (req, reply) => {
        const rel = await resolveModel(ctx, req.params.model_name);
        assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
        await requireRelation(ctx, rel);
        const profile = await profileForCaller(ctx, rel.schema, rel.table, req.caller, clientGone(reply));
        const history = (await profileHistory(ctx, rel.full, 30)).map((h) => ({ run_id: h.run_id, row_count: h.row_count, profiled_at: h.profiled_at }));
        return { model: rel.full, ...profile, history };
      },
    });

    ctx.route<unknown, unknown, { schema: string; table: string }>({
      method: 'GET',
      url: '/api/tables/:schema/:table/profile',
      permission: 'read',
      summary: 'Column statistics of any table or view (sample values masked per policies)',
      tags: ['quality'],
      schema: {
        params: { type: 'object', required: ['schema', 'table'], properties: { schema: { type: 'string', minLength: 1 }, table: { type: 'string', minLength: 1 } } },
      },
      handler: async (req, reply) => {
        const { schema, table } = req.params;
        assertVisible(req.caller, schema, table);
        if (!(await relationExists(ctx, schema, table))) throw notFound('table_not_found', `No table or view ${schema}.${table}`, { schema, table });
        return profileForCaller(ctx, schema, table, req.caller, clientGone(reply));
      },
    });

    ctx.route<unknown, { max_hours: number }>({
      method: 'GET',
      url: '/api/freshness',
      permission: 'read',
      summary: 'Hours since each model was last built; older than max_hours is stale',
      tags: ['quality'],
      schema: {
        querystring: { type: 'object', additionalProperties: false, properties: { max_hours: { type: 'number', exclusiveMinimum: 0, default: 24 } } },
      },
      handler: async (req) => {
        const report = await modelFreshness(ctx, req.query.max_hours ?? 24);
        const models = visibleTo(req.caller, report.models, (m) => m.model);
        return { ...report, models, stale_count: models.filter((m) => m.status !== 'fresh').length };
      },
    });

    ctx.route({
      method: 'GET',
      url: '/api/sources/freshness',
      permission: 'read',
      summary: "Each declared source table's newest loaded_at_column value against its source's freshness_hours",
      tags: ['quality'],
      handler: async (req, reply) => sourceFreshness(ctx, req.caller, clientGone(reply)),
    });

    ctx.route<unknown, { limit: number }>({
      method: 'GET',
      url: '/api/anomalies',
      permission: 'read',
      summary: 'Recent anomalies (Z-score of row count, null percentage or distinct count above the threshold)',
      tags: ['quality'],
      schema: { querystring: limitQuery(100) },
      handler: async (req) => ({ anomalies: visibleTo(req.caller, await listAnomalies(ctx, { limit: req.query.limit ?? 100 }), (a) => a.model) }),
    });

    ctx.route<unknown, { limit: number }, { model_name: string }>({
      method: 'GET',
      url: '/api/anomalies/:model_name',
      permission: 'read',
      summary: 'Anomalies of one model',
      tags: ['quality'],
      schema: { params: modelParams, querystring: limitQuery(100) },
      handler: async (req) => {
        const rel = await resolveModel(ctx, req.params.model_name);
        assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
        return { model: rel.full, anomalies: await listAnomalies(ctx, { model: rel.full, limit: req.query.limit ?? 100 }) };
      },
    });

    ctx.route<unknown, { limit: number }>({
      method: 'GET',
      url: '/api/alerts',
      permission: 'read',
      summary: 'Alert history, newest first',
      tags: ['quality'],
      schema: { querystring: limitQuery(100) },
      handler: async (req) => ({ alerts: await alertHistory(ctx, req.query.limit ?? 100) }),
    });

    ctx.route<{ channel: Channel; chat_webhook_url?: string; webhook_url?: string; message?: string }>({
      method: 'POST',
      url: '/api/alerts/test',
      permission: 'write',
      summary: 'Sends a test alert to one channel now (URLs in the body override project.yml) and returns the delivery record',
      tags: ['quality'],
      schema: {
        body: {
          type: 'object',
          required: ['channel'],
          additionalProperties: false,
          properties: {
            channel: { enum: [...CHANNELS] },
            chat_webhook_url: { type: 'string', minLength: 1 },
            webhook_url: { type: 'string', minLength: 1 },
            message: { type: 'string', maxLength: 2000 },
          },
        },
      },
      handler: async (req) => {
        for (const field of ['chat_webhook_url', 'webhook_url'] as const) {
          const url = req.body[field];
          if (url !== undefined && !/^https?:\/\/[^\s]+$/i.test(url)) throw badRequest('invalid_url', `'${field}' must be an http or https URL`, { field });
        }
        return alerts.send(
          { type: 'test', title: 'Test alert', message: req.body.message ?? 'dp can reach this channel.', details: { requested_by: req.caller.username } },
          req.body.channel,
          { chat_webhook_url: req.body.chat_webhook_url, webhook_url: req.body.webhook_url },
        );
      },
    });

    // ------------------------------------------------------------------ CLI

    ctx.command('contracts', async (args, io) => {
      const filter = (args.name as string | undefined) ?? null;
      if (args.history) {
        const history = await contractHistory(ctx, { filter, limit: Number(args.limit ?? 50) });
        if (io.wantsJson) io.json(history);
        else io.table(history.map((h) => ({ checked_at: h.checked_at, contract: h.contract_name, model: h.model, severity: h.severity, result: h.passed ? 'pass' : 'FAIL', error: h.error ?? '' })));
        return 0;
      }
      io.progress('Running contracts…');
      const run = await runContracts(ctx, filter);
      if (io.wantsJson) io.json(run);
      else printContractRun(io, run);
      return hasBlockingFailure(run) || run.errors.length > 0 ? 1 : 0;
    });

    ctx.command('assertions', async (args, io) => {
      const model = args.model ? (await resolveModel(ctx, String(args.model))).full : undefined;
      const results = await listAssertionResults(ctx, { model, limit: Number(args.limit ?? 100) });
      if (io.wantsJson) io.json(results);
      else io.table(results.map((r) => ({ checked_at: r.checked_at, model: r.model, assertion: r.expression, result: r.passed ? 'pass' : 'FAIL', detail: summarizeOutcome(r) })));
      return 0;
    });

    ctx.command('profile', async (args, io) => {
      if (args.model) {
        const rel = await resolveModel(ctx, String(args.model));
        await requireRelation(ctx, rel);
        io.progress(`Profiling ${rel.full}…`);
        const profile = await profileForCaller(ctx, rel.schema, rel.table, io.caller ?? LOCAL_ADMIN);
        if (io.wantsJson) io.json(profile);
        else printProfile(io, rel.full, profile);
        return 0;
      }
      const rows: Array<Record<string, unknown>> = [];
      for (const model of await knownModels(ctx)) {
        const { schema, table } = splitRelation(model);
        if (!schema || !(await relationExists(ctx, schema, table))) {
          rows.push({ model, status: 'not_built' });
          continue;
        }
        io.progress(`Profiling ${model}…`);
        const p = await computeStats(ctx, schema, table);
        const nullCells = p.columns.reduce((a, c) => a + c.null_count, 0);
        rows.push({ model, status: 'ok', rows: p.row_count, columns: p.column_count, null_cells: nullCells });
      }
      if (io.wantsJson) io.json(rows);
      else io.table(rows, ['model', 'status', 'rows', 'columns', 'null_cells']);
      return 0;
    });

    ctx.command('freshness', async (args, io) => {
      const hours = Number(args.hours ?? 24);
      if (!(hours > 0)) throw badRequest('invalid_hours', '--hours must be a positive number', { field: 'hours' });
      let staleCount: number;
      let staleNames: string[];
      if (args.sources) {
        const report = await sourceFreshness(ctx, io.caller ?? LOCAL_ADMIN);
        staleCount = report.stale_count;
        staleNames = report.sources.filter(isStaleSource).map((s) => `${s.schema}.${s.table}`);
        if (io.wantsJson) io.json(report);
        else io.table(report.sources.map((s) => ({ source: s.source, table: `${s.schema}.${s.table}`, loaded_at_column: s.loaded_at_column, max_loaded_at: s.max_loaded_at, hours: s.hours_since_load, sla_hours: s.freshness_hours, status: s.status })));
      } else {
        const report = await modelFreshness(ctx, hours);
        staleCount = report.stale_count;
        staleNames = report.models.filter((m) => m.status !== 'fresh').map((m) => m.model);
        if (io.wantsJson) io.json(report);
        else io.table(report.models.map((m) => ({ model: m.model, last_built_at: m.last_built_at, hours: m.hours_since_build, status: m.status })));
      }
      if (args.alert && staleCount > 0) {
        const records = await alerts.notify({
          type: 'stale_data',
          title: `${staleCount} stale ${args.sources ? 'source table' : 'model'}${staleCount === 1 ? '' : 's'}`,
          message: staleNames.join('\n'),
          details: { kind: args.sources ? 'sources' : 'models', max_hours: args.sources ? null : hours, stale: staleNames },
        });
        for (const r of records) io.err(`alert via ${r.channel}: ${r.status}${r.error ? ` (${r.error})` : ''}`);
      }
      return staleCount > 0 ? 1 : 0;
    });
  },
});
