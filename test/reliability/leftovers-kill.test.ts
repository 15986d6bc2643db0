/**
 * What a kill leaves behind (issues 34.2, 34.3), with the real `dp` binary and kill -9
 * (test/reliability/kill-harness.ts):
 * - a transform or stream killed mid-run leaves a run record, marked `interrupted` at the next start;
 * - a killed `dp backup` leaves no hidden partial copy in `_backups/` after the next start, and
 *   every listed backup is complete (it verifies) and the manifest lists exactly the files;
 * - what a killed backup-restore, sync or import leaves (a temporary copy beside the database, a
 *   partial pre-restore copy, a named pipe in `.dp/sync/`, an upload in `.dp/imports/`) is removed
 *   at the next start, and a backup is never left under its final name before it is complete.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess } from '../helpers.js';
import { randomInt, runDp, runKillTrials, spawnDp, withDatabase, type KillScenario } from './kill-harness.js';

const MODELS = 4;
function bigProject(extra: Record<string, string> = {}): string {
  const files: Record<string, string> = { 'project.yml': 'name: left\ndatabase:\n  path: left.duckdb\n', ...extra };
  // About 100 MB of values DuckDB cannot compress, so a kill can land mid-copy: hash() makes
  // them for a quarter of the CPU md5() took for the same size.
  for (let i = 0; i < MODELS; i++) files[`transform/main/m${i}.sql`] = `SELECT i AS id, hash(i) AS a, hash(-i) AS b FROM range(${1_500_000 + i}) r(i)\n`;
  return makeProject(files);
}

describe('what a kill leaves behind', () => {
  it('a transform and a stream killed mid-run leave a run record, marked interrupted at the next start', async () => {
    // Small models, and one that reads a named pipe nobody writes: its build waits in open() for
    // good, so the run is under way when the kill lands, however fast the machine (no big data, no timer).
    const files: Record<string, string> = { 'project.yml': 'name: left\ndatabase:\n  path: left.duckdb\n' };
    for (let i = 0; i < MODELS; i++) files[`transform/main/m${i}.sql`] = `SELECT i AS id FROM range(${100 + i}) r(i)\n`;
    const root = makeProject(files);
    const pipe = path.join(root, 'never-written.csv');
    execFileSync('mkfifo', [pipe]);
    fs.writeFileSync(path.join(root, 'transform', 'main', 'waits_on_pipe.sql'), `SELECT * FROM read_csv('${pipe}')\n`);
    fs.appendFileSync(path.join(root, 'project.yml'), 'streams:\n  nightly:\n    steps:\n      - transform: [all]\n');
    // The stream first: on a fresh database its transform step builds every model (none is skipped).
    for (const [name, args, table] of [
      ['stream', ['jobs', 'run', 'nightly', '--project', root], '_service.run_history'],
      ['transform', ['transform', '--force', '--project', root], '_service.transform_runs'],
    ] as const) {
      const scenario: KillScenario = {
        name,
        // Killed once the first model is built: the run is well under way.
        progress: /\bbuilt\b/,
        killPoint: () => ({ afterLines: 1, delayMs: 0 }),
        async start() {
          return spawnDp([...args]);
        },
        async verify(_t, outcome) {
          assert.ok(!outcome.finishedFirst, `${name}: the run was killed before it ended`);
          // The next start (any command that opens the database) marks it.
          assert.equal((await runDp(['versions', 'list', '--project', root])).code, 0);
          await withDatabase(path.join(root, 'left.duckdb'), async (all) => {
            const statuses = (await all(`SELECT status FROM ${table}`)).map((r) => String(r.status));
            assert.ok(statuses.length >= 1, `${name}: the killed run is in the history`);
            assert.deepEqual([...new Set(statuses)], ['interrupted'], `${name}: the killed run is marked interrupted`);
          });
        },
      };
      await runKillTrials(scenario, { seed: 3, trials: 1 });
    }
  });

  it('a killed dp backup leaves no partial copy: after the next start each listed backup is complete and the manifest lists exactly the files', async () => {
    const root = bigProject();
    assert.equal((await runDp(['transform', '--project', root])).code, 0);
    const backups = path.join(root, '_backups');
    fs.mkdirSync(backups, { recursive: true });
    const isPartial = (name: string) => name.startsWith('.') && name.endsWith('.tmp');
    let sawPartial = 0;
    let watcher: fs.FSWatcher | undefined;
    const scenario: KillScenario = {
      name: 'backup',
      progress: /copying/,
      // Counted from when the hidden copy appears, not from the "copying" line: on a busy machine
      // the process can be descheduled between printing the line and creating the file, and a
      // kill that lands there leaves nothing partial to check.
      killPoint: (t) => ({ afterLines: 1, delayMs: randomInt(t.rng, 0, 30) }),
      armWhen() {
        return new Promise<void>((resolve) => {
          // Closed at the first partial copy, or in verify when none appeared (an open watcher
          // would keep the test process alive).
          const w = fs.watch(backups, (_event, name) => {
            if (name && isPartial(String(name))) {
              w.close();
              resolve();
            }
          });
          watcher = w;
        });
      },
      async start() {
        return spawnDp(['backup', '--no-verify', '--project', root]);
      },
      async verify(t, outcome) {
        watcher?.close();
        const label = `trial ${t.index} (+${outcome.point.delayMs} ms${outcome.finishedFirst ? ', finished first' : ''})`;
        if (fs.readdirSync(backups).some(isPartial)) sawPartial++;
        // One App for the checks (its start is the next start), closed before the next trial's dp opens the file.
        try {
          const listed = await runInProcess(['backups', '--json', '--project', root]);
          assert.equal(listed.code, 0, `${label}: ${listed.stderr}`);
          const entries = JSON.parse(listed.stdout) as Array<{ path: string }>;
          const files = fs.readdirSync(backups).filter((n) => n !== 'manifest.json');
          assert.deepEqual(files.filter((n) => n.startsWith('.')), [], `${label}: no hidden partial copy left`);
          const manifest = JSON.parse(fs.readFileSync(path.join(backups, 'manifest.json'), 'utf8')) as { backups: Array<{ path: string }> };
          assert.deepEqual(manifest.backups.map((b) => b.path).sort(), entries.map((e) => e.path).sort(), `${label}: the manifest is in step with the records`);
          for (const e of entries) {
            const v = await runInProcess(['backup-verify', e.path, '--project', root]);
            assert.equal(v.code, 0, `${label}: ${e.path} is complete: ${v.stdout}${v.stderr}`);
          }
        } finally {
          await closeInProcessClis();
        }
      },
    };
    let outcomes: Awaited<ReturnType<typeof runKillTrials>>;
    try {
      outcomes = await runKillTrials(scenario, { seed: 21, trials: 3 });
    } finally {
      watcher?.close();
    }
    assert.ok(outcomes.some((o) => !o.finishedFirst), 'at least one trial killed a running backup');
    assert.ok(sawPartial > 0, 'at least one kill landed while the copy was being written');
  });

  it('the next start removes what a killed backup-restore, sync or import left, and keeps what a live process owns', async () => {
    const root = makeProject({ 'project.yml': 'name: sweep\ndatabase:\n  path: w.duckdb\n' });
    assert.equal((await runDp(['versions', 'list', '--project', root])).code, 0);
    const dead = 2 ** 22 + 12345; // above Linux's default pid_max: no such process
    const planted = [
      `_backups/.w-pre-restore-20260101-000000.duckdb.${dead}.tmp`,
      '_backups/.w-20260101-000000.duckdb.4242.tmp',
      '.w.duckdb.restore.tmp',
      `.dp/imports/${dead}-0f8e.csv`,
      '.dp/imports/6d1c2f44-3a1b-4c55-9b0e-2f1c9a7e1111.xlsx',
    ];
    for (const rel of planted) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), 'partial');
    }
    fs.mkdirSync(path.join(root, '.dp/sync'), { recursive: true });
    execFileSync('mkfifo', [path.join(root, `.dp/sync/${dead}-1a2b.csv`)]);
    const live = `.dp/imports/${process.pid}-in-use.csv`;
    fs.writeFileSync(path.join(root, live), 'in use');

    assert.equal((await runDp(['versions', 'list', '--project', root])).code, 0);
    for (const rel of [...planted, `.dp/sync/${dead}-1a2b.csv`]) assert.ok(!fs.existsSync(path.join(root, rel)), `${rel} was removed at start`);
    assert.ok(fs.existsSync(path.join(root, live)), 'an upload of a running process stays');
  });
});
