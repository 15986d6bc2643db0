/**
 * The webhook notifier behind `ctx.notifier` (sdk/notifier.ts): JSON POSTs through undici with a
 * per-attempt timeout, one retry (network error, timeout, 408, 429, 5xx), a throttle of
 * MAX_PER_ORIGIN messages in flight per receiver origin, and deliveries that name the origin
 * only, never the URL (a chat webhook's path or a `?token=` is a secret).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { NotifierService, WebhookDelivery, WebhookMessage } from '../sdk/notifier.js';
import { undiciRequest } from '../sdk/undici.js';

const DEFAULT_TIMEOUT_MS = 10_000;
const RETRY_DELAY_MS = 500;
const ATTEMPTS = 2;
/** Messages in flight to one origin at a time; the others queue in order. */
export const MAX_PER_ORIGIN = 4;

class DeliveryError extends Error {
  constructor(
    message: string,
    readonly httpStatus: number | null,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** undici's error text (an aggregate's inner messages), with its code; it names no URL. */
function networkErrorText(e: unknown): string {
  const err = e as { code?: string; message?: string; errors?: Array<{ message?: string }> };
  const inner = err.errors?.map((x) => x.message).filter(Boolean).join('; ');
  const text = err.message || inner || String(e);
  return err.code && !text.includes(err.code) ? `${err.code}: ${text}` : text;
}

export class WebhookNotifier implements NotifierService {
  private readonly pending = new Set<Promise<unknown>>();
  /** Per origin: messages in flight and the turns waiting for a slot. */
  private readonly origins = new Map<string, { active: number; waiting: Array<() => void> }>();

  send(message: WebhookMessage): Promise<WebhookDelivery> {
    const work = this.deliver(message);
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
    return work;
  }

  async drain(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private async deliver(message: WebhookMessage): Promise<WebhookDelivery> {
    const delivery: WebhookDelivery = { status: 'failed', target: null, attempts: 0, http_status: null, error: null };
    let url: URL;
    try {
      url = new URL(message.url);
    } catch {
      delivery.error = 'invalid URL';
      return delivery;
    }
    delivery.target = url.origin;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      delivery.error = `only http and https URLs can receive webhooks, not ${url.protocol}`;
      return delivery;
    }
    const release = await this.turn(url.origin);
    try {
      await this.post(url, message, delivery);
    } finally {
      release();
    }
    return delivery;
  }

  /** Waits for a slot of `origin`; the returned function gives it back. */
  private async turn(origin: string): Promise<() => void> {
    let o = this.origins.get(origin);
    if (!o) this.origins.set(origin, (o = { active: 0, waiting: [] }));
    const slot = o;
    if (slot.active >= MAX_PER_ORIGIN) await new Promise<void>((resolve) => slot.waiting.push(resolve));
    else slot.active++;
    return () => {
      const next = slot.waiting.shift();
      // The slot passes straight to the next in line; the last one out forgets the origin.
      if (next) next();
      else if (--slot.active === 0) this.origins.delete(origin);
    };
  }

  private async post(url: URL, message: WebhookMessage, delivery: WebhookDelivery): Promise<void> {
    const timeoutMs = message.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      delivery.attempts = attempt;
      try {
        const res = await undiciRequest(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': message.userAgent ?? 'dp' },
          body: JSON.stringify(message.payload),
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          signal: AbortSignal.timeout(timeoutMs * 2),
        });
        await res.body.dump();
        delivery.http_status = res.statusCode;
        if (res.statusCode >= 200 && res.statusCode < 300) {
          delivery.status = 'sent';
          delivery.error = null;
          return;
        }
        const retryable = res.statusCode === 408 || res.statusCode === 429 || res.statusCode >= 500;
        throw new DeliveryError(`receiver answered HTTP ${res.statusCode}`, res.statusCode, retryable);
      } catch (e) {
        const err = e instanceof DeliveryError ? e : new DeliveryError(networkErrorText(e), null, true);
        delivery.error = err.message;
        if (!err.retryable || attempt === ATTEMPTS) return;
        await sleep(RETRY_DELAY_MS);
      }
    }
  }
}
