/**
 * Issue 34 point 5: during a connector sync a small query's p99 went from 37 ms to over 500 ms.
 * The cause measured (bench/mixed-load.mjs, bench/README.md): a csv sync passed every row through
 * the server's event loop (DuckDB's reader → JSON values → the appender), converting and appending
 * a whole 10,000-row batch in one synchronous stretch, so every other request waited for it.
 * Now a type that reads with DuckDB's own readers syncs in one engine statement, and the appender
 * (the path of every other type) gives the event loop a turn between chunks. Both are checked by
 * what happens, not by a clock: whether a callback queued during a bulk load runs before the
 * batch is done, and whether a sync of a type the JS path could not carry (TIME) arrives whole.
 * Memory under load: a collaboration client that stops reading is dropped past a bound, as an
 * SSE subscriber already was, instead of the server keeping every update for it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { startTestServer, type PluginTestServer } from '../../sdk/testing.js';
import { TEXT_CONTENT } from '../../plugins/notebooks/collaboration/protocol.js';
import { COLLAB_PLUGINS, connect, wsUrl } from '../plugins/notebooks/collaboration-support.js';

/** What the writer types last: seen by the stalled client only if the server kept everything for it. */
const END = Buffer.from('end-of-the-updates-marker');

describe('interactive work goes on while a sync loads rows', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({
      plugins: [],
      builtIn: ['connectors', 'query', 'files', 'scripts', 'streams', 'models'],
      files: { 'data/source/times.csv': 'id,at,happened\n1,12:34:56,2024-01-01 10:00:00.123456\n2,01:02:03,2024-01-02 10:00:00\n' },
    });
  });
  after(async () => s?.close());

  it('a bulk load of one large batch lets other callbacks run before the batch is done', async () => {
    const rows = 10_000;
    let converted = 0;
    // The appender converts each VARCHAR value on the event loop: an object's toJSON counts it.
    const value = { toJSON: () => (converted++, 'x') };
    let convertedWhenOthersRan = -1;
    await s.db.bulkLoad({ table: 'load_batch', mode: 'replace', columns: [{ name: 'v', type: 'VARCHAR' }] }, async (writer) => {
      const appended = writer.appendRows(Array.from({ length: rows }, () => [value]));
      // Queued after the batch started: runs at the event loop's next turn.
      setImmediate(() => (convertedWhenOthersRan = converted));
      await appended;
    });
    assert.equal(converted, rows);
    assert.equal(await s.db.value('SELECT count(*)::INTEGER FROM load_batch'), rows);
    assert.ok(convertedWhenOthersRan >= 0 && convertedWhenOthersRan < rows, `other work ran only after ${convertedWhenOthersRan} of ${rows} values`);
  });

  it('a csv sync runs in the engine: a TIME column arrives as read (the row path could not convert it)', async () => {
    const setup = await s.request('POST', '/api/connectors/setup', {
      connector_type: 'csv',
      connection_name: 'source',
      config: { path: 'data/source' },
      tables: [{ name: 'times', cdc_mode: 'high_watermark', cdc_column: 'happened' }],
      target_schema: 'raw',
    });
    assert.equal(setup.status, 200, setup.text);
    const sync = await s.request('POST', '/api/connectors/sync/source', {});
    assert.equal(sync.status, 200, sync.text);
    assert.deepEqual(
      sync.body.results.map((r: { status: string; rows_synced: number; watermark_after: string }) => [r.status, r.rows_synced, r.watermark_after]),
      [['success', 2, '2024-01-02 10:00:00']],
      sync.text,
    );
    const read = await s.request('POST', '/api/query', { sql: 'SELECT id, "at", happened FROM raw.times ORDER BY id' });
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body.column_types, ['BIGINT', 'TIME', 'TIMESTAMP']);
    assert.deepEqual(read.body.rows, [
      [1, '12:34:56', '2024-01-01 10:00:00.123456'],
      [2, '01:02:03', '2024-01-02 10:00:00'],
    ]);
  });
});

describe('a collaboration client that stops reading', () => {
  let s: PluginTestServer;
  const DOC = 'notebooks/shared.sql';
  before(async () => {
    s = await startTestServer({ plugins: [], builtIn: COLLAB_PLUGINS, files: { [DOC]: '-- typed together\n' } });
  });
  after(async () => s?.close());

  it('is closed with 1013 once it leaves more than 4 MiB unread, instead of the server buffering every update for it', async () => {
    const stalled = new WebSocket(wsUrl(s.url, DOC));
    await new Promise((resolve, reject) => (stalled.once('open', resolve), stalled.once('error', reject)));
    // The client's socket stops reading: what the server sends piles up in the kernel, then in the server.
    (stalled as unknown as { _socket: { pause(): void } })._socket.pause();
    const outcome = new Promise<string>((resolve) => {
      stalled.once('close', (code) => resolve(`closed ${code}`));
      stalled.on('message', (data: Buffer) => {
        if (data.includes(END)) resolve('read to the end');
      });
    });

    const writer = connect(s.url, DOC);
    await writer.whenSynced();
    const text = writer.doc.getText(TEXT_CONTENT);
    // 48 updates of 512 KiB, each deleted again (the document stays small): far past the kernel's
    // socket buffers and the server's bound together.
    const block = 'x'.repeat(512 * 1024);
    for (let i = 0; i < 48; i++) {
      text.insert(0, block);
      text.delete(0, block.length);
    }
    text.insert(0, END.toString());
    // The writer's own round trip: the server has taken every update in and sent it on.
    await writer.save();
    (stalled as unknown as { _socket: { resume(): void } })._socket.resume();
    assert.equal(await outcome, 'closed 1013');
    writer.destroy();
  });
});
