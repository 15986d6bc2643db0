/** The pipeline event source: what a new listener gets (the running pipeline's events only), replay after Last-Event-ID, unsubscribe. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PipelineEvents } from '../../../plugins/streams/events.js';

describe('pipeline events', () => {
  it('gives a new listener the running pipeline events so far, none of earlier runs, nothing when idle', () => {
    const events = new PipelineEvents(100);
    events.push('start', { run_id: 'r1' });
    events.push('step_start', { run_id: 'r1', step: 0 });
    events.push('complete', { run_id: 'r1' });
    assert.deepEqual(events.since(null), [], 'idle: nothing to replay');
    const second = events.push('start', { run_id: 'r2' });
    events.push('step_start', { run_id: 'r2', step: 0 });
    assert.deepEqual(
      events.since(null).map((e) => [e.event, (e.data as { run_id: string }).run_id]),
      [
        ['start', 'r2'],
        ['step_start', 'r2'],
      ],
    );
    // A reconnecting listener gets exactly what it missed, whatever run it belongs to.
    assert.deepEqual(events.since(String(Number(second.id) - 1)).map((e) => e.id), events.since(null).map((e) => e.id));
    assert.deepEqual(events.since('2').map((e) => e.event), ['complete', 'start', 'step_start']);
  });

  it('delivers live events to every subscriber until it unsubscribes', () => {
    const events = new PipelineEvents(10);
    const a: string[] = [];
    const b: string[] = [];
    const offA = events.subscribe((e) => a.push(e.event!));
    const offB = events.subscribe((e) => b.push(e.event!));
    events.push('start', {});
    offA();
    events.push('complete', {});
    assert.equal(events.listeners, 1);
    offB();
    offB();
    assert.equal(events.listeners, 0, 'a second unsubscribe changes nothing');
    events.push('start', {});
    assert.deepEqual(a, ['start']);
    assert.deepEqual(b, ['start', 'complete']);
  });
});
