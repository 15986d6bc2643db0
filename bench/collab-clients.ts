/**
 * The typists of bench/collab.bench.ts, in a child process so that their own work is neither on
 * the server's event loop nor in its CPU time: `clients` Yjs clients join one document, each types one character every
 * `intervalMs` for `durationMs`, and every client notes when each other client's keystroke
 * arrives. Sender and receivers share this thread's clock.
 */
import { performance } from 'node:perf_hooks';
import * as Y from 'yjs';
import { TEXT_CONTENT } from '../plugins/notebooks/collaboration/protocol.js';
import { connect } from '../test/plugins/notebooks/collaboration-support.js';

interface Job {
  url: string;
  doc: string;
  clients: number;
  intervalMs: number;
  durationMs: number;
}

const job = JSON.parse(process.argv[2]) as Job;
const sentAt = new Map<string, number>();
const latencies: number[] = [];
const clients = Array.from({ length: job.clients }, () => connect(job.url, job.doc));
await Promise.all(clients.map((c) => c.whenSynced()));
for (const c of clients) {
  c.doc.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== c) return; // only what arrived from the server
    const now = performance.now();
    for (const s of Y.decodeUpdate(update).structs) {
      const sent = sentAt.get(`${s.id.client}:${s.id.clock}`);
      if (sent !== undefined) latencies.push(now - sent);
    }
  });
}

let edits = 0;
const stopAt = performance.now() + job.durationMs;
await Promise.all(
  clients.map(
    (c, i) =>
      new Promise<void>((resolve) => {
        const text = c.doc.getText(TEXT_CONTENT);
        // Staggered so the typists do not all press a key in the same millisecond.
        setTimeout(() => {
          const timer = setInterval(() => {
            if (performance.now() > stopAt) {
              clearInterval(timer);
              resolve();
              return;
            }
            const clock = Y.getState(c.doc.store, c.doc.clientID);
            sentAt.set(`${c.doc.clientID}:${clock}`, performance.now());
            text.insert(Math.floor(Math.random() * (text.length + 1)), String.fromCharCode(97 + (i % 26)));
            edits++;
          }, job.intervalMs);
        }, (i * job.intervalMs) / job.clients);
      }),
  ),
);
// The last keystrokes' arrivals.
const expected = edits * (job.clients - 1);
const until = performance.now() + 5000;
while (latencies.length < expected && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
const texts = new Set(clients.map((c) => c.doc.getText(TEXT_CONTENT).toString()));
for (const c of clients) c.destroy();
process.send?.({ edits, expected, latencies, converged: texts.size === 1 }, () => process.exit(0));
