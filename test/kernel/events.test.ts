/**
 * The event bus (`ctx.events`) with typed event refs: a ref and its plain name are one event
 * (JavaScript plugins and the SSE relays pass names), `*` sees every event, and an unsubscribe
 * ends delivery. The owners' refs keep the names that go over the wire.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KernelEventBus } from '../../kernel/events.js';
import { CATALOG_CHANGED, CONFIG_CHANGED, createEventRef, MODEL_END, MODEL_START, STREAM_EVENTS, TRANSFORM_END, TRANSFORM_START, type BusEvent } from '../../sdk/index.js';

describe('event bus with event refs', () => {
  const DONE = createEventRef<{ count: number }>('example.done');

  it('delivers an event emitted by ref to listeners by ref, by name and on *', () => {
    const bus = new KernelEventBus();
    const byRef: number[] = [];
    const byName: unknown[] = [];
    const all: string[] = [];
    bus.on(DONE, (e) => byRef.push(e.payload.count));
    bus.on('example.done', (e) => byName.push(e.payload.count));
    bus.on('*', (e) => all.push(e.type));
    bus.emit(DONE, { count: 2 });
    bus.emit('example.done', { count: 3 });
    assert.deepEqual(byRef, [2, 3]);
    assert.deepEqual(byName, [2, 3]);
    assert.deepEqual(all, ['example.done', 'example.done']);
  });

  it('stamps the type and time, and stops delivering after the unsubscribe', () => {
    const bus = new KernelEventBus();
    const seen: Array<BusEvent<{ count: number }>> = [];
    const off = bus.on(DONE, (e) => seen.push(e));
    bus.emit(DONE, { count: 1 });
    off();
    bus.emit(DONE, { count: 2 });
    assert.equal(seen.length, 1);
    assert.equal(seen[0].type, 'example.done');
    assert.ok(!Number.isNaN(Date.parse(seen[0].at)));
  });

  it('types the payload by the ref (checked by the build)', () => {
    const bus = new KernelEventBus();
    const seen: number[] = [];
    bus.on(MODEL_END, (e) => seen.push(e.payload.duration_ms));
    bus.emit(MODEL_END, { run_id: 'r', model: 'm.a', status: 'built', duration_ms: 5 });
    // @ts-expect-error a payload that is not the ref's does not compile
    bus.emit(MODEL_END, { run_id: 'r', model: 'm.a', status: 'done', duration_ms: 5 });
    // @ts-expect-error nor does a listener that reads a field the payload does not have
    bus.on(MODEL_START, (e) => seen.push(e.payload.duration_ms));
    assert.deepEqual(seen, [5, 5]);
  });

  it('keeps the owners\' event names (what SSE clients and plain-name listeners use)', () => {
    assert.deepEqual(
      [CATALOG_CHANGED, CONFIG_CHANGED, TRANSFORM_START, MODEL_START, MODEL_END, TRANSFORM_END].map((r) => r.id),
      ['catalog.changed', 'config.changed', 'transform_start', 'model_start', 'model_end', 'transform_end'],
    );
    assert.deepEqual(
      Object.entries(STREAM_EVENTS).map(([kind, ref]) => [kind, ref.id]),
      ['start', 'step_start', 'step_end', 'model_start', 'model_end', 'complete', 'error'].map((kind) => [kind, `stream.${kind}`]),
    );
  });
});
