/**
 * Connection.interruptUntilSettled, the one loop behind query deadlines, the drain and aborted
 * transforms: DuckDB forgets an interrupt that arrives before a statement starts, so the loop
 * repeats it until the caller's work settled. Real DuckDB files.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DuckDatabase } from '../../kernel/database.js';
import { tempDir } from '../helpers.js';

const LONG = 'SELECT sum(i) FROM range(10000000000000) t(i)';
const tempFile = () => path.join(tempDir('dp-interrupt-'), 'db.duckdb');
const noop = () => {};

describe('Connection.interruptUntilSettled', () => {
  it('stops a running statement and resolves once it let go', async () => {
    const db = new DuckDatabase(tempFile());
    const c = await db.connect();
    try {
      const work = c.query(LONG);
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      await c.interruptUntilSettled(work.catch(noop));
      await assert.rejects(work, /interrupt/i);
      assert.ok(Date.now() - started < 5000, 'the statement did not stop');
    } finally {
      c.close();
      db.close();
    }
  });

  it('stops a statement that starts after the first interrupt (which DuckDB forgets)', async () => {
    const db = new DuckDatabase(tempFile());
    const c = await db.connect();
    try {
      let begin!: () => void;
      const go = new Promise<void>((r) => (begin = r));
      const work = go.then(() => c.query(LONG));
      const stopping = c.interruptUntilSettled(work.catch(noop), { everyMs: 20 });
      // The statement starts well after the first interrupt was sent: only a repeat can stop it.
      setTimeout(begin, 150);
      await assert.rejects(work, /interrupt/i);
      await stopping;
    } finally {
      c.close();
      db.close();
    }
  });

  it('ends its loop when the work settles on its own, and interrupts nothing after', async () => {
    const db = new DuckDatabase(tempFile());
    const c = await db.connect();
    try {
      await c.interruptUntilSettled(Promise.resolve());
      // The connection still answers: no interrupt is left pending for the next statement.
      await new Promise((r) => setTimeout(r, 80));
      assert.deepEqual((await c.query('SELECT 42 AS a')).rows, [[42]]);
    } finally {
      c.close();
      db.close();
    }
  });
});
