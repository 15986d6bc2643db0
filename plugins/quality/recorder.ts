/**
 * What every model build leaves behind, recorded off the transform's critical path: the build's
 * time and status (`_service.model_freshness`) and, with anomaly detection on, a metrics-only
 * profile (`_service.model_profiles`).
 *
 * The afterModelBuild tap only queues a build and returns, so the next models of the DAG start at
 * once. One worker records whatever has queued up, as one batch in one transaction: one catalog
 * query for the columns of the batch's relations, one INSERT … SELECT that profiles every relation
 * of the batch, one upsert of the build records. A 200-model run costs a few DuckDB round trips
 * per batch instead of several per model, and the profiling runs beside the builds.
 *
 * `settled(runId)` resolves once every build of a run is recorded; afterTransform awaits it before
 * comparing profiles, so a transform resolves only when its records are complete.
 */
import { errorMessage, type PluginContext } from '../../sdk/index.js';
import { recordBuildsSql, type BuildRecord } from './freshness.js';
import { recordProfilesSql, type ProfileTarget } from './profiles.js';
import { columnsKey, relationColumns, utcNow } from './relations.js';

export interface QueuedBuild extends BuildRecord {
  schema: string;
  table: string;
  /** Record a metrics profile as well (anomaly detection is on). */
  profile: boolean;
}

/** Upper bound of builds recorded by one statement. */
export const MAX_BATCH = 100;

interface Pending {
  count: number;
  waiters: Array<() => void>;
}

export class BuildRecorder {
  private readonly queue: QueuedBuild[] = [];
  private worker: Promise<void> | null = null;
  /** Builds queued but not yet recorded, per run. */
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly ctx: PluginContext) {}

  /** Queues a build for recording and returns at once. */
  add(build: QueuedBuild): void {
    this.queue.push(build);
    const key = build.runId ?? '';
    const p = this.pending.get(key) ?? { count: 0, waiters: [] };
    p.count++;
    this.pending.set(key, p);
    this.kick();
  }

  /** Resolves once every build of `runId` queued so far is recorded (or its recording failed and was logged). */
  settled(runId: string | null): Promise<void> {
    const p = this.pending.get(runId ?? '');
    if (!p) return Promise.resolve();
    return new Promise((resolve) => p.waiters.push(resolve));
  }

  /** Resolves once the queue is empty and nothing is being recorded. */
  async drain(): Promise<void> {
    while (this.worker) await this.worker;
  }

  private kick(): void {
    if (this.worker) return;
    this.worker = this.work().finally(() => {
      this.worker = null;
      if (this.queue.length) this.kick();
    });
  }

  private async work(): Promise<void> {
    // Let the tap that queued the first build return before the worker takes the batch.
    await Promise.resolve();
    while (this.queue.length) {
      const batch = this.takeBatch();
      try {
        await this.record(batch);
      } catch (e) {
        this.ctx.log.error('recording model builds failed', { models: batch.map((b) => b.model), error: errorMessage(e) });
      }
      for (const b of batch) this.done(b.runId ?? '');
    }
  }

  /** The next builds in queue order, at most MAX_BATCH, and each model once (so profiles keep their order). */
  private takeBatch(): QueuedBuild[] {
    const seen = new Set<string>();
    let n = 0;
    while (n < this.queue.length && n < MAX_BATCH && !seen.has(this.queue[n].model)) seen.add(this.queue[n++].model);
    return this.queue.splice(0, n);
  }

  private done(key: string): void {
    const p = this.pending.get(key);
    if (!p) return;
    if (--p.count > 0) return;
    this.pending.delete(key);
    for (const w of p.waiters) w();
  }

  private async record(batch: QueuedBuild[]): Promise<void> {
    const { ctx } = this;
    const builds = recordBuildsSql(batch);
    const targets: ProfileTarget[] = [];
    const toProfile = batch.filter((b) => b.profile);
    if (toProfile.length) {
      const columns = await relationColumns(ctx, toProfile);
      for (const b of toProfile) {
        const cols = columns.get(columnsKey(b.schema, b.table));
        if (cols) targets.push({ runId: b.runId, model: b.model, schema: b.schema, table: b.table, columns: cols });
        else ctx.log.warn('a built model is gone before its profile was recorded', { model: b.model });
      }
    }
    const profiledAt = utcNow();
    try {
      const statements = targets.length ? [builds, recordProfilesSql(targets, profiledAt)] : [builds];
      await ctx.db.run(`BEGIN TRANSACTION;\n${statements.join(';\n')};\nCOMMIT;`);
    } catch (e) {
      if (targets.length === 0) throw e;
      // One relation that cannot be profiled (a view whose source is gone, say) must not cost the
      // others their records: record the builds, then each profile on its own.
      await ctx.db.run(builds);
      for (const t of targets) {
        try {
          await ctx.db.run(recordProfilesSql([t], profiledAt));
        } catch (err) {
          ctx.log.error('recording a model profile failed', { model: t.model, error: errorMessage(err) });
        }
      }
    }
  }
}
