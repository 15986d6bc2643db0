/**
 * The webhook inbox: `POST /api/webhook/{name}` stores `{id, received_at, payload}` in
 * `landing.<name>_inbox` (docs/decisions.md "Connector"). The shared secret is the kernel's
 * webhook guard's to check; the 5 MB limit is the route's body limit (413 before anything runs).
 * One transaction creates the table when needed and inserts the row: an error stores nothing.
 */
import crypto from 'node:crypto';
import { badRequest, qualified, SAFE_NAME, type DatabasePort } from '../../sdk/index.js';

export const WEBHOOK_SCHEMA = 'landing';
export const WEBHOOK_BODY_LIMIT = 5 * 1024 * 1024;

export const inboxTable = (name: string) => `${name}_inbox`;

export function checkWebhookName(name: unknown): string {
  if (typeof name !== 'string' || !SAFE_NAME.test(name) || name.length > 100) {
    throw badRequest('invalid_webhook_name', 'A webhook name is letters, digits and underscores, not starting with a digit', { field: 'webhook_name' });
  }
  return name;
}

export class WebhookInbox {
  constructor(private readonly db: () => DatabasePort) {}

  private ddl(name: string): string {
    return `CREATE SCHEMA IF NOT EXISTS ${WEBHOOK_SCHEMA};
      CREATE TABLE IF NOT EXISTS ${qualified(WEBHOOK_SCHEMA, inboxTable(name))} (id VARCHAR PRIMARY KEY, received_at TIMESTAMP NOT NULL, payload JSON)`;
  }

  async ensure(name: string): Promise<void> {
    await this.db().run(this.ddl(checkWebhookName(name)));
  }

  async receive(name: string, payload: unknown): Promise<{ id: string; received_at: string; table: string }> {
    checkWebhookName(name);
    if (payload === undefined) throw badRequest('invalid_webhook_payload', 'The webhook body must be JSON', { field: 'body' });
    const id = crypto.randomUUID();
    const receivedAt = new Date().toISOString().replace('T', ' ').replace('Z', '');
    await this.db().withConnection((c) =>
      c.transaction(async (tx) => {
        await tx.run(this.ddl(name));
        await tx.run(`INSERT INTO ${qualified(WEBHOOK_SCHEMA, inboxTable(name))} VALUES ($1, $2::TIMESTAMP, $3::JSON)`, [id, receivedAt, JSON.stringify(payload)]);
      }),
    );
    return { id, received_at: receivedAt, table: `${WEBHOOK_SCHEMA}.${inboxTable(name)}` };
  }
}
