/**
 * GET /api/transform/events: a client connected before a run sees each model start and end
 * live, then the run's end; one that connects after gets them replayed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

/** Reads the stream until `done(text)` or the deadline; returns what was read. `onOpen` runs once subscribed (the headers arrived). */
async function readEvents(url: string, done: (text: string) => boolean, options: { deadlineMs?: number; onOpen?: () => void } = {}): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.deadlineMs ?? 30_000);
  let text = '';
  try {
    const res = await fetch(url, { signal: controller.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    options.onOpen?.();
    const reader = res.body!.getReader();
    while (!done(text)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      text += Buffer.from(value).toString();
    }
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return text;
}

describe('transform events (SSE)', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(
      makeProject({
        'transform/staging/a.sql': 'SELECT 1 AS x',
        'transform/marts/b.sql': 'SELECT x + 1 AS y FROM staging.a',
        'transform/marts/broken.sql': 'SELECT nope FROM staging.a',
      }),
    );
  });
  after(async () => s?.close());

  it('streams each model’s start and end live, and replays them to a later client', async () => {
    // The stream is open before the run starts.
    let subscribed!: () => void;
    const opened = new Promise<void>((resolve) => (subscribed = resolve));
    const live = readEvents(`${s.url}/api/transform/events`, (t) => t.includes('event: transform_end'), { onOpen: subscribed });
    await Promise.race([opened, live]);
    const run = await s.request('POST', '/api/transform', {});
    assert.equal(run.status, 200, run.text);
    const text = await live;
    const events = [...text.matchAll(/^event: (\w+)\ndata: (.*)$/gm)].map((m) => ({ type: m[1], data: JSON.parse(m[2]) }));
    assert.equal(events[0].type, 'transform_start');
    assert.equal(events.at(-1)!.type, 'transform_end');
    const ends = events.filter((e) => e.type === 'model_end');
    assert.deepEqual(ends.map((e) => e.data.model).sort(), ['marts.b', 'marts.broken', 'staging.a']);
    assert.equal(ends.find((e) => e.data.model === 'marts.broken')!.data.status, 'error');
    assert.ok(ends.every((e) => e.data.run_id === run.body.run_id));
    const replay = await readEvents(`${s.url}/api/transform/events`, (t) => t.includes('event: transform_end'));
    assert.equal((replay.match(/event: model_end/g) ?? []).length, 3);
  });
});
