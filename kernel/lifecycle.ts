import { DpError, errorMessage, isDpError } from '../sdk/errors.js';
import type { Logger } from '../sdk/plugin.js';

/**
 * Plugin lifecycle: `start` once the database is open and migrated; on shutdown, maintenance or
 * an environment switch `beforeStop` (schedulers and sockets stop taking work) and then `stop`
 * (drain, flush), both in reverse plugin order. Each phase of each plugin has a deadline: a start
 * past it fails the boot naming the plugin, a stop past it is logged naming the plugin and
 * shutdown goes on. Stop phases run only after a start, so CLI and server see the same pairs.
 */
export type LifecyclePhase = 'start' | 'beforeStop' | 'stop';

export type PhaseTimeouts = Record<LifecyclePhase, number>;

export const DEFAULT_PHASE_TIMEOUTS_MS: PhaseTimeouts = { start: 30_000, beforeStop: 10_000, stop: 10_000 };

const PHASE_CALLBACK: Record<LifecyclePhase, string> = { start: 'onStart', beforeStop: 'beforeStop', stop: 'onStop' };

type Callback = () => Promise<void> | void;

/** Rejects after `ms` unless `work` settles first (the timer is cleared as soon as it does). */
async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export class PluginLifecycle {
  private readonly callbacks: Array<{ plugin: string; phase: LifecyclePhase; fn: Callback }> = [];
  private readonly order: string[] = [];
  /** Plugins whose start phase has begun since the last start (a plugin loaded on demand may join late). */
  private readonly begun = new Set<string>();
  private running = false;
  private controller = new AbortController();
  /** Kernel work around the plugins' phases (the scheduler): after every start, before the first beforeStop. */
  private readonly kernel: { afterStart: Callback[]; beforeStop: Callback[] } = { afterStart: [], beforeStop: [] };

  constructor(
    private readonly timeouts: PhaseTimeouts,
    private readonly log: Logger,
  ) {}

  /** Runs `fn` once every plugin has started (`afterStart`) or before any plugin's beforeStop (`beforeStop`). */
  around(when: 'afterStart' | 'beforeStop', fn: Callback): void {
    this.kernel[when].push(fn);
  }

  register(plugin: string, phase: LifecyclePhase, fn: Callback): void {
    if (!this.order.includes(plugin)) this.order.push(plugin);
    this.callbacks.push({ plugin, phase, fn });
  }

  /** Aborted when runs must end (shutdown, maintenance, environment switch); a fresh one after each start. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get started(): boolean {
    return this.running;
  }

  /** Tells every run holding the current signal to stop. */
  abortRuns(reason: DpError): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  private async runPhase(plugin: string, phase: LifecyclePhase): Promise<void> {
    const fns = this.callbacks.filter((c) => c.plugin === plugin && c.phase === phase).map((c) => c.fn);
    if (fns.length === 0) return;
    const ms = this.timeouts[phase];
    const callback = PHASE_CALLBACK[phase];
    const work = (async () => {
      for (const fn of fns) await fn();
    })();
    await withDeadline(
      work,
      ms,
      () =>
        new DpError(500, `plugin_${phase === 'beforeStop' ? 'before_stop' : phase}_timeout`, `Plugin '${plugin}': ${callback} did not finish within ${ms / 1000} s`, {
          plugin,
          phase,
          timeout_ms: ms,
        }),
    ).catch((e) => {
      // A plugin's own DpError keeps its code (callers and tests match on it), with the plugin named in details.
      if (isDpError(e)) {
        if (e.details.plugin === undefined) e.details.plugin = plugin;
        throw e;
      }
      throw new DpError(500, `plugin_${phase === 'beforeStop' ? 'before_stop' : phase}_failed`, `Plugin '${plugin}': ${callback} failed: ${errorMessage(e)}`, { plugin, phase });
    });
  }

  /** Runs every plugin's start callbacks in plugin order; the first failure or timeout is thrown. */
  async start(): Promise<void> {
    if (this.running) return;
    if (this.controller.signal.aborted) this.controller = new AbortController();
    // Set first: when a start fails, the plugins that did start are still stopped.
    this.running = true;
    this.begun.clear();
    for (const plugin of this.order) await this.startOne(plugin);
    for (const fn of this.kernel.afterStart) await fn();
  }

  private async startOne(plugin: string): Promise<void> {
    if (this.begun.has(plugin)) return;
    this.begun.add(plugin);
    await this.runPhase(plugin, 'start');
  }

  /**
   * Starts plugins loaded on demand after start() ran (their setup registered their callbacks
   * late); before it, or when none was started, start() runs them in order with the rest.
   */
  async startLate(plugins: string[]): Promise<void> {
    if (!this.running) return;
    for (const plugin of plugins) if (this.order.includes(plugin)) await this.startOne(plugin);
  }

  /**
   * beforeStop, then `drain` (the caller's wait for in-flight work), then stop; the plugin phases
   * in reverse plugin order, their failures and timeouts logged, never thrown. Without a start
   * only `drain` runs, so a plugin's stop callbacks never run without its start.
   */
  async stop(reason: DpError, drain: () => Promise<void> = async () => {}): Promise<void> {
    this.abortRuns(reason);
    if (!this.running) return drain();
    this.running = false;
    const reversed = [...this.order].reverse();
    const phase = async (name: 'beforeStop' | 'stop') => {
      for (const plugin of reversed) {
        try {
          await this.runPhase(plugin, name);
        } catch (e) {
          this.log.error(errorMessage(e), { plugin, phase: name });
        }
      }
    };
    for (const fn of this.kernel.beforeStop) {
      try {
        await fn();
      } catch (e) {
        this.log.error(errorMessage(e), { phase: 'beforeStop' });
      }
    }
    await phase('beforeStop');
    await drain();
    await phase('stop');
  }
}
