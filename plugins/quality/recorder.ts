/**
 * What every model build leaves behind, recorded off the transform's critical path: the build's
 * time and status (`_service.model_freshness`) and, with anomaly detection on, a metrics-only
 * profile (`_service.model_profiles`).
 *
 * The afterModelBuild tap only queues a build and returns, so the next models of the DAG start at
 * once. One worker records what has queued up, as one batch in one transaction: one catalog query
 * for the columns of the batch's relations, one INSERT … SELECT that profiles every relation of the
 * batch, one upsert of the build records. The profiling runs beside the builds, and a 200-model run
 * costs a few statements per batch instead of several per model.
 *
 * Batches are worth making large: DuckDB profiles 25 small tables in one UNION ALL for about a
 * third of what 25 separate statements cost (each distinct count has a fixed setup cost), and
 * fewer batches contend less with the builds still running. So the worker starts a batch once
 * MIN_BATCH builds wait, or someone waits for them (`settled`, `drain`), or the oldest has waited
 * MAX_WAIT_MS.
 *
 * `settled(runId)` resolves once every build of a run is recorded; afterTransform awaits it before
 * comparing profiles, so a transform resolves only when its records are complete.
 */
import { errorMessage, type PluginContext } from '../../sdk/index.js';
import { recordBuildsSql, type QueuedBuild } from './freshness.js';
import { copyProfilesSql, fingerprintsSql, LATEST_FINGERPRINTS_SQL, recordProfilesSql, storedFingerprint, type ProfileTarget, type LatestProfile } from './profiles.js';
import { columnsKey, relationColumns, utcNow } from './relations.js';
import { activeTarget, recordOnTarget } from './target-records.js';

export type { QueuedBuild };

/** Runs whose stored profiles are kept at most (a run that never settles must not hold them forever). */
const KEPT_RUNS = 4;

/** Upper bound of builds recorded by one statement. */
export const MAX_BATCH = 100;
/**
 * Builds that start a batch at once. Full batches, not small ones: each batch's fingerprint query
 * and transaction compete with the builds still running for the same cores and DuckDB's commit,
 * and a 200-model run recorded in 2 batches costs about 300 ms less CPU than in 9
 * (bench/README.md "Transform overhead: fewer, fuller record batches").
 */
export const MIN_BATCH = MAX_BATCH;
/**
 * How long a build waits for others to share its batch when nobody waits for it. A transform
 * waits for its builds' records when it ends (afterTransform), so this bounds only how late a
 * record of a long run shows before the run ends.
 */
export const MAX_WAIT_MS = 1000;

interface Pending {
  count: number;
  waiters: Array<() => void>;
  /** Every build of the run is queued (`allQueued`): nothing more will share its batch. */
  complete?: boolean;
}

export class BuildRecorder {
  private readonly queue: QueuedBuild[] = [];
  private worker: Promise<void> | null = null;
  /** Builds queued but not yet recorded, per run. */
  private readonly pending = new Map<string, Pending>();
  /** Callers of drain() still waiting. */
  private draining = 0;
  /** Ends the worker's wait for a fuller batch. */
  private wake: (() => void) | null = null;
  /**
   * Per transform run being recorded: each model's latest stored profile (seq, fingerprint), read
   * at the run's first batch and dropped when the run has settled (a few runs at most). A profile stored since has
   * the content of a build recorded in this run: comparing with an older one of equal fingerprint
   * still copies metrics of the same rows, and no profile is ever deleted.
   */
  private readonly latest = new Map<string, Promise<Map<string, LatestProfile>>>();

  constructor(private readonly ctx: PluginContext) {}

  /** Queues a build for recording and returns at once. */
  add(build: QueuedBuild): void {
    this.queue.push(build);
    const key = build.runId ?? '';
    const p = this.pending.get(key) ?? { count: 0, waiters: [] };
    p.count++;
    this.pending.set(key, p);
    if (this.queue.length >= MIN_BATCH) this.wake?.();
    this.kick();
  }

  /**
   * Says every build of `runId` is queued: its last batch starts now, without waiting for company
   * or for the run's end (afterTransform comes only after the run's own record is written).
   */
  allQueued(runId: string): void {
    const p = this.pending.get(runId);
    if (!p) return;
    p.complete = true;
    this.wake?.();
  }

  /** Resolves once every build of `runId` queued so far is recorded (or its recording failed and was logged). */
  settled(runId: string | null): Promise<void> {
    // Awaited when the run is over (afterTransform): its stored profiles are not read again.
    const forget = () => void this.latest.delete(runId ?? '');
    const p = this.pending.get(runId ?? '');
    if (!p) return Promise.resolve().then(forget);
    const settled = new Promise<void>((resolve) => p.waiters.push(resolve));
    this.wake?.();
    return settled.then(forget);
  }

  /** Resolves once the queue is empty and nothing is being recorded. */
  async drain(): Promise<void> {
    this.draining++;
    try {
      this.wake?.();
      while (this.worker) await this.worker;
    } finally {
      this.draining--;
    }
  }

  private kick(): void {
    if (this.worker) return;
    this.worker = this.work().finally(() => {
      this.worker = null;
      if (this.queue.length) this.kick();
    });
  }

  private async work(): Promise<void> {
    // Builds queued in the same tick share the batch.
    await Promise.resolve();
    while (this.queue.length) {
      if (this.queue.length < MIN_BATCH && !this.awaited()) await this.fuller();
      const batch = this.takeBatch();
      try {
        await this.record(batch);
      } catch (e) {
        this.ctx.log.error('recording model builds failed', { models: batch.map((b) => b.model), error: errorMessage(e) });
      }
      for (const b of batch) this.done(b.runId ?? '');
    }
  }

  /** True when someone waits for builds still queued, or a run's builds are all queued. */
  private awaited(): boolean {
    if (this.draining > 0) return true;
    for (const p of this.pending.values()) if (p.waiters.length || p.complete) return true;
    return false;
  }

  /** Waits until MIN_BATCH builds are queued, someone waits for them, or MAX_WAIT_MS have passed. */
  private fuller(): Promise<void> {
    return new Promise((resolve) => {
      // On ctx.clock (whose system timers do not hold the process open): a test moves its own.
      const timer = this.ctx.clock.setTimeout(() => this.wake?.(), MAX_WAIT_MS);
      this.wake = () => {
        this.ctx.clock.clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
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
    const target = activeTarget(ctx);
    if (target) return recordOnTarget(ctx, target, batch);
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
    const unchanged = targets.length ? await this.unchanged(targets) : new Map<ProfileTarget, LatestProfile>();
    const copies = [...unchanged].map(([target, stored]) => ({ target, stored }));
    const fresh = targets.filter((t) => !unchanged.has(t));
    const profiledAt = utcNow();
    const statements = [builds];
    if (copies.length) statements.push(copyProfilesSql(copies, profiledAt));
    if (fresh.length) statements.push(recordProfilesSql(fresh, profiledAt));
    try {
      // One text inside the connection's transaction: it starts with the builds' INSERT, so the port
      // knows it for a write without asking DuckDB to prepare (plan) every statement of the batch first.
      await ctx.db.withConnection((c) => c.transaction((t) => t.run(statements.join(';\n'))));
    } catch (e) {
      if (targets.length === 0) throw e;
      // One relation that cannot be profiled (a view whose source is gone, say) must not cost the
      // others their records: record the builds, then each profile on its own.
      await ctx.db.run(builds);
      if (copies.length) {
        try {
          await ctx.db.run(copyProfilesSql(copies, profiledAt));
        } catch (err) {
          ctx.log.error('recording model profiles failed', { models: copies.map((c) => c.target.model), error: errorMessage(err) });
        }
      }
      for (const t of fresh) {
        try {
          await ctx.db.run(recordProfilesSql([t], profiledAt));
        } catch (err) {
          ctx.log.error('recording a model profile failed', { model: t.model, error: errorMessage(err) });
        }
      }
    }
  }

  /**
   * Targets whose content has the fingerprint of their model's latest stored profile, with that
   * profile: profiling them again would store the same metrics. When the fingerprints cannot
   * be taken (a relation that cannot be read), every target is profiled, and the profile pass
   * reports why.
   */
  private async unchanged(targets: ProfileTarget[]): Promise<Map<ProfileTarget, LatestProfile>> {
    const out = new Map<ProfileTarget, LatestProfile>();
    try {
      const runs = [...new Set(targets.map((t) => t.runId ?? ''))];
      const [stored, contents] = await Promise.all([
        Promise.all(runs.map((run) => this.latestOf(run))).then((maps) => new Map(runs.map((run, i) => [run, maps[i]!]))),
        this.ctx.db.all<{ k: number; f: string }>(fingerprintsSql(targets)),
      ]);
      for (const r of contents) {
        const t = targets[Number(r.k)]!;
        const latest = stored.get(t.runId ?? '')!.get(t.model);
        if (latest?.fingerprint && latest.fingerprint === storedFingerprint(t, r.f)) out.set(t, latest);
      }
    } catch {
      out.clear();
    }
    return out;
  }

  /** Each model's latest stored profile, read once per run (every batch for builds outside a run). */
  private latestOf(run: string): Promise<Map<string, LatestProfile>> {
    let latest = run ? this.latest.get(run) : undefined;
    if (!latest) {
      latest = this.ctx.db
        .all<{ model: string; seq: bigint | number; row_count: bigint | number | null; columns: string; fingerprint: string | null }>(LATEST_FINGERPRINTS_SQL)
        .then((rows) => new Map(rows.map((r) => [r.model, { seq: Number(r.seq), rowCount: r.row_count === null ? null : Number(r.row_count), columns: r.columns, fingerprint: r.fingerprint }])));
      if (run) {
        this.latest.set(run, latest);
        while (this.latest.size > KEPT_RUNS) this.latest.delete(this.latest.keys().next().value as string);
      }
      // A failed read is not kept: the next batch asks again.
      latest.catch(() => this.latest.delete(run));
    }
    return latest;
  }
}
