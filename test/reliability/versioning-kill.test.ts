/**
 * kill -9 of the real `dp versions create` at seeded random points (test/reliability/kill-harness.ts).
 * After each kill the version either lists complete (its folder holds every Parquet file of its
 * manifest with the row counts it claims, equal to the tables) or not at all, no temporary
 * folder survives the next start, and every version folder is listed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject } from '../helpers.js';
import { randomInt, runDp, runKillTrials, spawnDp, withDatabase, type KillScenario } from './kill-harness.js';

const TABLES = 6;
const rowsOf = (i: number) => (i % 2 === 0 ? 400_000 : 50_000);

describe('kill -9 during dp versions create', () => {
  it('leaves each version listed complete or not at all', async () => {
    const files: Record<string, string> = { 'project.yml': 'name: killver\ndatabase:\n  path: test.duckdb\n' };
    for (let i = 0; i < TABLES; i++) {
      files[`transform/main/t${i}.sql`] = `SELECT i AS id, 'label ' || (i % 1000) AS label, i * 1.5 AS amount FROM range(${rowsOf(i)}) r(i)\n`;
    }
    const root = makeProject(files);
    assert.equal((await runDp(['transform', '--project', root])).code, 0);
    const snapshots = path.join(root, '_snapshots');
    let listedBefore = 0;
    /** Trials whose kill left a half-written temporary folder (before the next start removed it). */
    let halfWritten = 0;

    const scenario: KillScenario = {
      name: 'versions create',
      progress: /^\[\d+\/\d+\] /,
      killPoint: (t) => ({ afterLines: randomInt(t.rng, 0, TABLES), delayMs: randomInt(t.rng, 0, 80) }),
      async start() {
        return spawnDp(['versions', 'create', '--project', root]);
      },
      async verify(t, outcome) {
        const label = `trial ${t.index} (${outcome.point.afterLines} lines + ${outcome.point.delayMs} ms${outcome.finishedFirst ? ', finished first' : ''})`;
        if (fs.existsSync(snapshots) && fs.readdirSync(snapshots).some((n) => n.startsWith('.tmp-'))) halfWritten++;
        // The next start reconciles _snapshots/ with the records.
        const listed = await runDp(['versions', 'list', '--json', '--project', root]);
        assert.equal(listed.code, 0, `${label}: ${listed.stderr}`);
        const versions = JSON.parse(listed.stdout) as Array<{ version_id: string; table_count: number; total_rows: number }>;
        assert.ok(versions.length === listedBefore || versions.length === listedBefore + 1, `${label}: ${versions.length} versions after ${listedBefore}`);
        if (outcome.finishedFirst) assert.equal(versions.length, listedBefore + 1, `${label}: a finished create lists its version`);
        listedBefore = versions.length;
        const onDisk = fs.readdirSync(snapshots);
        assert.deepEqual(onDisk.filter((n) => n.startsWith('.')), [], `${label}: no temporary folder left`);
        assert.deepEqual([...onDisk].sort(), versions.map((v) => v.version_id).sort(), `${label}: every version folder is listed, every listed version has its folder`);
        await withDatabase(path.join(root, 'test.duckdb'), async (all) => {
          for (const v of versions) {
            const dir = path.join(snapshots, v.version_id);
            const manifest = JSON.parse(fs.readFileSync(path.join(dir, '_manifest.json'), 'utf8')) as { tables: Array<{ table: string; file: string; row_count: number }> };
            assert.equal(manifest.tables.length, TABLES, `${label}: ${v.version_id} holds every table`);
            assert.equal(v.table_count, TABLES);
            let total = 0;
            for (const tbl of manifest.tables) {
              const [r] = await all(`SELECT count(*)::INTEGER AS n FROM read_parquet('${path.join(dir, tbl.file)}')`);
              assert.equal(Number(r.n), tbl.row_count, `${label}: ${v.version_id}/${tbl.file} holds the rows its manifest claims`);
              assert.equal(tbl.row_count, rowsOf(Number(tbl.table.slice('main.t'.length))), `${label}: ${tbl.table} complete`);
              total += tbl.row_count;
            }
            assert.equal(v.total_rows, total);
          }
        });
      },
    };
    const outcomes = await runKillTrials(scenario, { seed: 14, trials: 5 });
    assert.ok(outcomes.some((o) => !o.finishedFirst), 'at least one trial killed a running create');
    assert.ok(halfWritten > 0, 'at least one kill landed while a version was half written');
  });
});
