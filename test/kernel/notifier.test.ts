/**
 * The kernel's webhook notifier (`ctx.notifier`), against real HTTP receivers on 127.0.0.1: one
 * retry after a 5xx, a receiver that never answers cut at the timeout, at most MAX_PER_ORIGIN
 * messages in flight per receiver, and deliveries that never carry the URL (only its origin).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { MAX_PER_ORIGIN, WebhookNotifier } from '../../kernel/notifier.js';

interface Receiver {
  url: string;
  bodies: unknown[];
  server: http.Server;
}

/** A receiver answering each request with `answer` (which may hold the response back). */
async function receiver(answer: (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void): Promise<Receiver> {
  const bodies: unknown[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      answer(req, res, bodies.length);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, server };
}

const receivers: Receiver[] = [];
after(() => {
  for (const r of receivers) r.server.closeAllConnections(), r.server.close();
});

describe('webhook notifier', () => {
  it('retries once after a 5xx and reports the origin, never the path holding a token', async () => {
    const r = await receiver((_req, res, n) => res.writeHead(n === 1 ? 503 : 200).end());
    receivers.push(r);
    const delivery = await new WebhookNotifier().send({ url: `${r.url}/hooks/T0KEN-secret?token=abc`, payload: { hello: 1 }, userAgent: 'dp-test' });
    assert.deepEqual(delivery, { status: 'sent', target: r.url, attempts: 2, http_status: 200, error: null });
    assert.deepEqual(r.bodies, [{ hello: 1 }, { hello: 1 }]);
    assert.doesNotMatch(JSON.stringify(delivery), /T0KEN|token=/);
  });

  it('does not retry a 4xx other than 408 and 429', async () => {
    const r = await receiver((_req, res) => res.writeHead(404).end());
    receivers.push(r);
    const delivery = await new WebhookNotifier().send({ url: `${r.url}/x`, payload: {} });
    assert.deepEqual([delivery.status, delivery.attempts, delivery.http_status, delivery.error], ['failed', 1, 404, 'receiver answered HTTP 404']);
  });

  it('cuts a receiver that never answers at the timeout, after one retry', async () => {
    const r = await receiver(() => undefined);
    receivers.push(r);
    const delivery = await new WebhookNotifier().send({ url: `${r.url}/slow`, payload: {}, timeoutMs: 150 });
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempts, 2);
    assert.match(delivery.error!, /timeout/i);
  });

  it('refuses other schemes and bad URLs without quoting them', async () => {
    const notifier = new WebhookNotifier();
    const file = await notifier.send({ url: 'file:///etc/passwd', payload: {} });
    assert.deepEqual([file.status, file.attempts], ['failed', 0]);
    assert.match(file.error!, /only http and https/);
    const bad = await notifier.send({ url: 'http://[secret-token', payload: {} });
    assert.deepEqual([bad.status, bad.error, bad.target], ['failed', 'invalid URL', null]);
  });

  it(`keeps at most ${MAX_PER_ORIGIN} messages in flight per receiver; the rest wait their turn`, async () => {
    const held: http.ServerResponse[] = [];
    let heldAll!: () => void;
    const allHeld = new Promise<void>((r) => (heldAll = r));
    let release = false;
    const r = await receiver((req, res) => {
      // A probe sent afterwards by another notifier is answered at once: once it is back, every
      // message the first notifier had put on the wire has arrived too.
      if (req.url === '/probe' || release) return void res.writeHead(200).end();
      held.push(res);
      if (held.length === MAX_PER_ORIGIN) heldAll();
    });
    receivers.push(r);
    const notifier = new WebhookNotifier();
    const sends = Array.from({ length: MAX_PER_ORIGIN + 2 }, (_, i) => notifier.send({ url: `${r.url}/burst`, payload: { i } }));
    await allHeld;
    assert.equal((await new WebhookNotifier().send({ url: `${r.url}/probe`, payload: { probe: true } })).status, 'sent');
    assert.equal(held.length, MAX_PER_ORIGIN, 'the other messages wait for a slot');
    release = true;
    for (const res of held.splice(0)) res.writeHead(200).end();
    const deliveries = await Promise.all(sends);
    await notifier.drain();
    assert.deepEqual(deliveries.map((d) => d.status), Array(MAX_PER_ORIGIN + 2).fill('sent'));
    assert.equal(r.bodies.filter((b) => !(b as { probe?: boolean }).probe).length, MAX_PER_ORIGIN + 2);
  });
});
