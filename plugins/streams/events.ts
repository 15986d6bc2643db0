/**
 * The pipeline event stream behind `GET /api/stream/events` (SPEC "Events"): `start`,
 * `step_start`, `model_start`, `model_end`, `complete`, `error` (and `step_end`), each a JSON
 * payload. A listener that connects without `Last-Event-ID` gets the running pipeline's events
 * so far and then live ones (nothing from earlier runs: the stream is "for the currently running
 * pipeline"); one that reconnects with `Last-Event-ID` gets what it missed from the buffer. The
 * kernel's SSE route kind sends keepalives and drops a listener that disconnects.
 */
import { SseBuffer, type PipelineEventKind, type SseEvent, type SseSource } from '../../sdk/index.js';

export class PipelineEvents implements SseSource {
  private readonly buffer: SseBuffer;
  /** Id of the running pipeline's `start` event; null when none runs. */
  private runStart: number | null = null;

  constructor(capacity = 2000) {
    this.buffer = new SseBuffer(capacity);
  }

  push(kind: PipelineEventKind, payload: Record<string, unknown>): SseEvent {
    const e = this.buffer.push(payload, kind);
    if (kind === 'start') this.runStart = Number(e.id);
    if (kind === 'complete' || kind === 'error') this.runStart = null;
    return e;
  }

  since(lastEventId: string | null): SseEvent[] {
    if (lastEventId !== null) return this.buffer.since(lastEventId);
    return this.runStart === null ? [] : this.buffer.since(String(this.runStart - 1));
  }

  private subscribers = 0;

  /** Listeners connected right now (a disconnected one is gone: the kernel unsubscribes it on close). */
  get listeners(): number {
    return this.subscribers;
  }

  subscribe(listener: (event: SseEvent) => void): () => void {
    const off = this.buffer.subscribe(listener);
    this.subscribers++;
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      this.subscribers--;
      off();
    };
  }
}
