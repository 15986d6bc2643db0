/**
 * The kernel's one sender of outgoing webhooks (`ctx.notifier`): quality's alerts and the
 * streams plugin's completion webhooks both POST through it, so they share one set of rules.
 */

export interface WebhookMessage {
  /** http or https only; the URL may hold a secret (a token in its path or query). */
  url: string;
  /** Sent as JSON. */
  payload: unknown;
  /** Per attempt, for the answer's headers and body (default 10 s); the whole attempt is cut at twice this. */
  timeoutMs?: number;
  /** Sent as `user-agent` (`dp-alerts/1.0`, `dp-streams`). */
  userAgent?: string;
}

/** What became of one message. Never holds the URL: `target` is its origin (scheme, host, port). */
export interface WebhookDelivery {
  status: 'sent' | 'failed';
  target: string | null;
  attempts: number;
  http_status: number | null;
  error: string | null;
}

export interface NotifierService {
  /**
   * POSTs `payload` as JSON; a network error, a timeout, 408, 429 or 5xx is retried once after
   * half a second. At most a few messages per receiver's origin are in flight at a time (the
   * rest wait their turn), so a burst of alerts cannot flood one receiver. Never throws: the
   * outcome is in the delivery.
   */
  send(message: WebhookMessage): Promise<WebhookDelivery>;
  /** Resolves once every message sent so far is delivered or failed. */
  drain(): Promise<void>;
}
