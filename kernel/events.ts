import { EventEmitter } from 'node:events';
import type { BusEvent, EventBus } from '../sdk/plugin.js';
import type { EventRef } from '../sdk/refs.js';

/** In-process event bus: run progress, builds, syncs. `*` listeners see everything (SSE). A ref names its event by its id. */
export class KernelEventBus implements EventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  emit<P extends object>(event: EventRef<P>, payload: P): void;
  emit(type: string, payload?: Record<string, unknown>): void;
  emit(name: string | EventRef<object>, payload: object = {}): void {
    const type = typeof name === 'string' ? name : name.id;
    const event: BusEvent = { type, at: new Date().toISOString(), payload: payload as Record<string, unknown> };
    this.emitter.emit(type, event);
    this.emitter.emit('*', event);
  }

  on<P extends object>(event: EventRef<P>, listener: (event: BusEvent<P>) => void): () => void;
  on(type: string, listener: (event: BusEvent) => void): () => void;
  on(name: string | EventRef<object>, listener: (event: BusEvent<never>) => void): () => void {
    const type = typeof name === 'string' ? name : name.id;
    this.emitter.on(type, listener);
    return () => this.emitter.off(type, listener);
  }
}
