/**
 * Alerts (docs/decisions.md "Alerts"): notifications to the `chat`, `webhook` and `log` channels, gated by
 * `on_failure` / `on_success`. Delivery is fire-and-record: hooks queue an alert and return at
 * once; each HTTP delivery goes through the kernel's notifier (`ctx.notifier`: timeout, one
 * retry, a throttle per receiver); every outcome lands in `_service.alert_history`. `drain()`
 * awaits what is still in flight (tests, shutdown).
 */
import { randomUUID } from 'node:crypto';
import { errorMessage, type PluginContext } from '../../sdk/index.js';
import { ALERTS_CONFIG } from './config.js';
import { isoUtc, parseJson, utcNow } from './relations.js';

export const CHANNELS = ['chat', 'webhook', 'log'] as const;
export type Channel = (typeof CHANNELS)[number];

export type AlertType = 'pipeline_failure' | 'pipeline_success' | 'assertion_failure' | 'stale_data' | 'anomaly' | 'test';

export interface Alert {
  type: AlertType;
  title: string;
  message: string;
  details: Record<string, unknown>;
}

export interface AlertRecord {
  id: string;
  alert_type: AlertType;
  channel: Channel;
  status: 'sent' | 'failed' | 'logged';
  /** Scheme, host and port of the receiver (paths of chat webhooks often hold a secret). */
  target: string | null;
  title: string;
  message: string;
  attempts: number;
  http_status: number | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
  payload?: unknown;
}

export interface DeliveryOverrides {
  chat_webhook_url?: string;
  webhook_url?: string;
}

const DEFAULT_TIMEOUT_SECONDS = 10;
const SUCCESS_TYPES: ReadonlySet<AlertType> = new Set(['pipeline_success']);

interface Settings {
  channels: Channel[];
  chatUrl?: string;
  webhookUrl?: string;
  onSuccess: boolean;
  onFailure: boolean;
  timeoutMs: number;
}

/** Scheme, host and port of a receiver (the record never keeps its path: it may hold a secret). */
function originOf(url: string | undefined): string | null {
  if (!url) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

export class AlertDispatcher {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly ctx: PluginContext) {}

  settings(): Settings {
    const a = this.ctx.config(ALERTS_CONFIG);
    const seconds = Number(a.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS);
    return {
      channels: (a.channels ?? []).filter((c): c is Channel => (CHANNELS as readonly string[]).includes(c)),
      chatUrl: a.chat_webhook_url || undefined,
      webhookUrl: a.webhook_url || undefined,
      onSuccess: a.on_success === true,
      onFailure: a.on_failure !== false,
      timeoutMs: Math.max(100, (Number.isFinite(seconds) ? seconds : DEFAULT_TIMEOUT_SECONDS) * 1000),
    };
  }

  /**
   * Queues an alert to the configured channels (or `channels`), respecting on_failure/on_success,
   * and returns without waiting; the returned promise settles when every delivery is recorded.
   */
  notify(alert: Alert, channels?: readonly string[]): Promise<AlertRecord[]> {
    const s = this.settings();
    const wanted = SUCCESS_TYPES.has(alert.type) ? s.onSuccess : s.onFailure;
    const targets = (channels ?? s.channels).filter((c): c is Channel => (CHANNELS as readonly string[]).includes(c));
    if (!wanted || targets.length === 0) return Promise.resolve([]);
    const work = Promise.all(targets.map((c) => this.deliver(alert, c, {})));
    this.track(work);
    return work;
  }

  /** Sends one alert to one channel now (the test endpoint); resolves with its record. */
  send(alert: Alert, channel: Channel, overrides: DeliveryOverrides = {}): Promise<AlertRecord> {
    const work = this.deliver(alert, channel, overrides);
    this.track(work);
    return work;
  }

  /** Resolves once every queued delivery has finished and been recorded. */
  async drain(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private track(p: Promise<unknown>): void {
    const tracked = p.catch((e) => this.ctx.log.error('alert delivery failed unexpectedly', { error: errorMessage(e) }));
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  private payload(alert: Alert, channel: Channel): unknown {
    if (channel === 'chat') {
      // `text` is the field Slack, Mattermost, Rocket.Chat and Google Chat incoming webhooks all read.
      return { text: `[dp ${this.ctx.project.config.name}] ${alert.title}\n${alert.message}` };
    }
    return {
      source: 'dp',
      alert_type: alert.type,
      title: alert.title,
      message: alert.message,
      project: this.ctx.project.config.name,
      environment: this.ctx.project.env,
      details: alert.details,
      sent_at: new Date().toISOString(),
    };
  }

  private async deliver(alert: Alert, channel: Channel, overrides: DeliveryOverrides): Promise<AlertRecord> {
    const s = this.settings();
    const created = utcNow();
    const record: AlertRecord = {
      id: randomUUID(),
      alert_type: alert.type,
      channel,
      status: 'failed',
      target: null,
      title: alert.title,
      message: alert.message,
      attempts: 0,
      http_status: null,
      error: null,
      created_at: created,
      finished_at: null,
    };
    const payload = this.payload(alert, channel);
    if (channel === 'log') {
      const log = alert.type === 'pipeline_success' || alert.type === 'test' ? this.ctx.log.info : this.ctx.log.warn;
      log.call(this.ctx.log, `alert: ${alert.title}`, { alert_type: alert.type, message: alert.message, ...alert.details });
      record.status = 'logged';
      record.attempts = 1;
    } else {
      const url = channel === 'chat' ? (overrides.chat_webhook_url ?? s.chatUrl) : (overrides.webhook_url ?? s.webhookUrl);
      record.target = originOf(url);
      if (!url) {
        record.error = `alerts.${channel === 'chat' ? 'chat_webhook_url' : 'webhook_url'} is not set`;
      } else {
        const delivery = await this.ctx.notifier.send({ url, payload, timeoutMs: s.timeoutMs, userAgent: 'dp-alerts/1.0' });
        Object.assign(record, { status: delivery.status, attempts: delivery.attempts, http_status: delivery.http_status, error: delivery.error });
      }
    }
    record.finished_at = utcNow();
    try {
      await this.ctx.db.run(
        `INSERT INTO _service.alert_history (id, alert_type, channel, status, target, title, message, payload, attempts, http_status, error, created_at, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::JSON, $9, $10, $11, $12::TIMESTAMP, $13::TIMESTAMP)`,
        [record.id, record.alert_type, channel, record.status, record.target, record.title, record.message, JSON.stringify(payload), record.attempts, record.http_status, record.error, created, record.finished_at],
      );
    } catch (e) {
      this.ctx.log.error('could not record alert', { error: errorMessage(e), alert_type: alert.type, channel });
    }
    if (record.status === 'failed') this.ctx.log.warn(`alert to ${channel} failed: ${record.error}`, { alert_type: alert.type });
    return { ...record, created_at: isoUtc(created) as string, finished_at: isoUtc(record.finished_at), payload };
  }

}

export async function alertHistory(ctx: PluginContext, limit: number): Promise<AlertRecord[]> {
  const rows = await ctx.db.all(
    `SELECT id, alert_type, channel, status, target, title, message, payload, attempts, http_status, error,
            CAST(created_at AS VARCHAR) AS created_at, CAST(finished_at AS VARCHAR) AS finished_at
       FROM _service.alert_history ORDER BY created_at DESC, id LIMIT ${Math.max(1, Math.floor(limit))}`,
  );
  return rows.map((r) => ({
    id: String(r.id),
    alert_type: r.alert_type as AlertType,
    channel: r.channel as Channel,
    status: r.status as AlertRecord['status'],
    target: (r.target as string | null) ?? null,
    title: String(r.title),
    message: String(r.message),
    attempts: Number(r.attempts),
    http_status: r.http_status === null ? null : Number(r.http_status),
    error: (r.error as string | null) ?? null,
    created_at: isoUtc(r.created_at) as string,
    finished_at: isoUtc(r.finished_at),
    payload: parseJson(r.payload, null),
  }));
}
