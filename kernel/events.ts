import { EventEmitter } from 'node:events';
import type { BusEvent, EventBus } from '../sdk/plugin.js';

/** In-process event bus: run progress, builds, syncs. `*` listeners see everything (SSE). */
export class KernelEventBus implements EventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  emit(type: string, payload: Record<string, unknown> = {}): void {
    const event: BusEvent = { type, at: new Date().toISOString(), payload };
    this.emitter.emit(type, event);
    this.emitter.emit('*', event);
  }

  on(type: string, listener: (event: BusEvent) => void): () => void {
    this.emitter.on(type, listener);
    return () => this.emitter.off(type, listener);
  }
}
