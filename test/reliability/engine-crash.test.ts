/**
 * A crash of the engine (DuckDB's native code dies on an input nobody foresaw: SIGSEGV) does not
 * take `dp serve` down (issue 38 point 1): the supervisor restarts the engine process on the same
 * database, answers `503 engine_restarting` meanwhile, and what was committed before the crash is
 * still there afterwards.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject, runCli, spawnServe } from '../helpers.js';

/** The engine process: the one child of the `dp serve` process. */
function enginePid(servePid: number): number {
  const children = fs.readFileSync(`/proc/${servePid}/task/${servePid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  assert.equal(children.length, 1, `one engine process under dp serve, got ${children.join(',')}`);
  return children[0]!;
}

async function serveProcess(root: string) {
  const served = await spawnServe(root);
  return { child: served.child, url: served.url, exited: served.exited.then(({ code }) => code) };
}

const TOTALS = 'SELECT count(*)::INTEGER AS n, sum(price)::INTEGER AS total FROM seeds.items';

describe('dp serve survives a crash of its engine', () => {
  it('restarts the engine after a SIGSEGV under load: the server answers again, with the committed data', async () => {
    const rows = Array.from({ length: 500 }, (_, i) => `${i},${i % 7}`).join('\n');
    const root = makeProject({ 'seeds/items.csv': `id,price\n${rows}\n` });
    const { child, url, exited } = await serveProcess(root);
    try {
      // A write through the running server (the CLI relays `dp seed` to it): in the WAL, not checkpointed.
      const seeded = runCli(['seed', '--project', root]);
      assert.equal(seeded.code, 0, seeded.stderr);
      // A connection handed to the engine in the instant it dies gets no answer at all (README): such
      // a request gives up after 10 s (as a client's own timeout would) and counts as 'reset'.
      const query = (sql: string) =>
        fetch(`${url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql }), signal: AbortSignal.timeout(10_000) });
      const before = await (await query(TOTALS)).json();
      assert.deepEqual(before.rows, [[500, [...Array(500).keys()].reduce((s, i) => s + (i % 7), 0)]]);

      const crashedEngine = enginePid(child.pid!);
      // The supervisor boots no app: DuckDB's native code is mapped in the engine only (a crash
      // there cannot reach the process that holds the port).
      const mapsDuckdb = (pid: number) => /duckdb/i.test(fs.readFileSync(`/proc/${pid}/maps`, 'utf8'));
      assert.equal(mapsDuckdb(child.pid!), false, 'the supervisor does not load DuckDB');
      assert.equal(mapsDuckdb(crashedEngine), true, 'the engine does');
      // Load: queries on kept-alive connections, all the time the engine dies and comes back.
      const outcomes: string[] = [];
      let stop = false;
      let wake: (() => void) | null = null;
      const note = (o: string) => {
        outcomes.push(o);
        wake?.();
      };
      const waitFor = async (done: () => boolean) => {
        while (!done()) await new Promise<void>((resolve) => (wake = resolve));
      };
      const clients = Array.from({ length: 6 }, async () => {
        while (!stop) {
          try {
            const res = await query(TOTALS);
            const body = await res.json();
            note(res.status === 200 ? `200 ${JSON.stringify(body.rows)}` : `${res.status} ${body.error.code}`);
          } catch {
            note('reset');
          }
          // A client that got no answer paces itself (as Retry-After asks) rather than spin on the restart.
          if (!outcomes[outcomes.length - 1]!.startsWith('200')) await new Promise((r) => setTimeout(r, 100));
        }
      });
      await waitFor(() => outcomes.length >= 30);
      const killedAt = outcomes.length;
      process.kill(crashedEngine, 'SIGSEGV');
      // The engine is back once a query after the crash answers 200 again.
      await waitFor(() => outcomes.slice(killedAt).some((o) => o.startsWith('503')) && outcomes.slice(outcomes.findIndex((o, i) => i >= killedAt && o.startsWith('503'))).some((o) => o.startsWith('200')));
      stop = true;
      await Promise.all(clients);

      assert.notEqual(enginePid(child.pid!), crashedEngine, 'a new engine process');
      const expected = `200 ${JSON.stringify(before.rows)}`;
      for (const o of outcomes) assert.ok(o === expected || o === 'reset' || o === '503 engine_restarting', o);
      // What was committed before the crash is intact, and the CLI still reaches the server.
      const after = await (await query(TOTALS)).json();
      assert.deepEqual(after.rows, before.rows);
      const health = await (await fetch(`${url}/api/health`)).json();
      assert.equal(health.status, 'ok');
      const status = runCli(['status', '--project', root, '--json']);
      assert.equal(status.code, 0, status.stderr);
      assert.ok(fs.existsSync(path.join(root, '.dp', 'server.json')));

      // SIGTERM still stops dp serve gracefully: exit 0, the CLI's server file removed.
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.ok(!fs.existsSync(path.join(root, '.dp', 'server.json')));
    } finally {
      child.kill('SIGKILL');
    }
  });
});
