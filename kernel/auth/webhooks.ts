import { badRequest, DpError, forbidden, unauthorized } from '../../sdk/errors.js';
import { constantTimeEqual } from './crypto.js';
import type { LoginRateLimiter } from './rate-limit.js';

/** docs/decisions.md "Authentication" 10. */
export const WEBHOOK_SECRET_HEADER = 'x-service-webhook-secret';
export const GLOBAL_WEBHOOK_SECRET_VAR = 'SERVICE_WEBHOOK_SECRET';
export const WEBHOOK_OPEN_VAR = 'SERVICE_WEBHOOK_OPEN';

/** `stripe-events` → `SERVICE_WEBHOOK_SECRET_STRIPE_EVENTS`. */
export function webhookSecretVar(name: string): string {
  return `${GLOBAL_WEBHOOK_SECRET_VAR}_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/**
 * Checks the shared secret of an incoming webhook call. Variables come from `lookup` (the
 * project's .env, then the process environment). Rules, in order:
 * - `SERVICE_WEBHOOK_OPEN=true`: accepted without any check (local development only);
 * - the secret is `SERVICE_WEBHOOK_SECRET_<NAME>`, else `SERVICE_WEBHOOK_SECRET`;
 *   neither set → 403 `webhook_not_configured` (closed by default);
 * - header missing → 401 `webhook_secret_required`; wrong → 401 `webhook_secret_invalid` (the
 *   caller failed to authenticate, as without the header; 403 stays for a webhook nobody may call).
 * The comparison is constant-time, and no message ever contains either secret.
 */
export function verifyWebhookSecret(
  name: string,
  headerValue: string | string[] | undefined,
  lookup: (key: string) => string | undefined,
  throttle?: { limiter: LoginRateLimiter; client: string },
): void {
  if (typeof name !== 'string' || name.length === 0) throw badRequest('invalid_webhook_name', 'A webhook needs a name', { field: 'webhook_name' });
  if ((lookup(WEBHOOK_OPEN_VAR) ?? '').trim().toLowerCase() === 'true') return;
  const perWebhookVar = webhookSecretVar(name);
  const expected = lookup(perWebhookVar) || lookup(GLOBAL_WEBHOOK_SECRET_VAR);
  if (!expected) {
    throw forbidden('webhook_not_configured', `Webhook '${name}' has no secret: set ${perWebhookVar} or ${GLOBAL_WEBHOOK_SECRET_VAR} in .env (or ${WEBHOOK_OPEN_VAR}=true for local development)`, {
      webhook: name,
      variables: [perWebhookVar, GLOBAL_WEBHOOK_SECRET_VAR],
    });
  }
  const given = Array.isArray(headerValue) ? headerValue[0] : headerValue;
  if (given === undefined || given === '') {
    throw unauthorized('webhook_secret_required', 'Send the webhook secret in the X-Service-Webhook-Secret header', { webhook: name, header: 'X-Service-Webhook-Secret' });
  }
  // Checked before the secret, so past the limit a right guess is refused like a wrong one.
  const wait = throttle?.limiter.retryAfterSeconds(throttle.client, name) ?? 0;
  if (wait > 0) {
    throw new DpError(429, 'too_many_webhook_failures', `Too many wrong secrets for webhook '${name}'; try again in ${wait} s`, { webhook: name, retry_after_seconds: wait }, { 'Retry-After': String(wait) });
  }
  if (!constantTimeEqual(given, expected)) {
    throttle?.limiter.recordFailure(throttle.client, name);
    throw unauthorized('webhook_secret_invalid', `Wrong webhook secret for '${name}'`, { webhook: name });
  }
  throttle?.limiter.recordSuccess(throttle.client, name);
}
