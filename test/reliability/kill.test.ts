/**
 * kill -9 of the real `dp` binary at seeded random points: `dp transform`, `dp seed` and a
 * `dp serve` saving files. After each kill every table is complete-old or complete-new, the
 * stored model state describes the table that is there (so the next run neither skips a stale
 * table nor rebuilds a finished one), and no file is half-written.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject } from '../helpers.js';
import { onLines, randomInt, runDp, runKillTrials, spawnDp, withDatabase, type KillOutcome, type KillScenario, type Trial } from './kill-harness.js';

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

/**
 * A set of named artifacts (model files or seed CSVs) whose content is a function of a
 * generation number, tracked through kill trials: `atRest` is the generation each table holds
 * after the last completed run.
 */
class Generations {
  atRest = new Map<string, number>();
  constructor(
    readonly names: string[],
    readonly write: (name: string, gen: number) => string,
  ) {}

  /** Writes every artifact at `gen`; returns the texts by name. */
  writeAll(gen: number): void {
    for (const n of this.names) this.write(n, gen);
  }
}

interface TableCheck {
  table: string;
  stateKey: string;
  rows: number;
  text: (gen: number) => string;
}

/**
 * The invariant after a kill or a run: each table holds exactly one generation, completely (its
 * row count), and the stored content hash is the hash of that generation's file. Returns the
 * generation each table holds.
 */
async function readTables(dbFile: string, checks: TableCheck[], label: string): Promise<Map<string, number>> {
  return withDatabase(dbFile, async (all) => {
    const states = new Map((await all('SELECT name, content_hash FROM _service.model_state')).map((r) => [String(r.name), String(r.content_hash)]));
    const held = new Map<string, number>();
    for (const c of checks) {
      const [r] = await all(`SELECT count(*)::INTEGER AS n, count(DISTINCT gen)::INTEGER AS gens, min(gen)::INTEGER AS gen FROM ${c.table}`);
      const gen = Number(r.gen);
      assert.equal(Number(r.n), c.rows, `${label}: ${c.table} is complete`);
      assert.equal(Number(r.gens), 1, `${label}: ${c.table} holds one generation`);
      assert.equal(states.get(c.stateKey), sha256(c.text(gen)), `${label}: the stored state of ${c.table} describes the generation-${gen} table it holds`);
      held.set(c.table, gen);
    }
    return held;
  });
}

/** readTables, plus: each table holds its old generation or the new one. */
async function checkTables(dbFile: string, checks: TableCheck[], oldGen: Map<string, number>, newGen: number, label: string): Promise<Map<string, number>> {
  const held = await readTables(dbFile, checks, label);
  for (const [table, gen] of held) {
    assert.ok(gen === oldGen.get(table) || gen === newGen, `${label}: ${table} holds generation ${gen}, neither old ${oldGen.get(table)} nor new ${newGen}`);
  }
  return held;
}

/**
 * After a kill: undo the change of every other artifact (back to the generation it had before
 * the killed run), rerun to completion, and check each artifact was rebuilt exactly when its
 * table did not already hold what its file now says, and ends holding it.
 */
async function undoAndRerun(opts: {
  root: string;
  gens: Generations;
  held: Map<string, number>;
  newGen: number;
  tableOf: (name: string) => string;
  command: string[];
  statusOf: (json: unknown) => Map<string, string>;
  checks: TableCheck[];
  label: string;
}): Promise<void> {
  const { gens, held, newGen, tableOf } = opts;
  const desired = new Map<string, number>();
  gens.names.forEach((n, i) => {
    const gen = i % 2 === 1 ? gens.atRest.get(n)! : newGen;
    if (gen !== newGen) gens.write(n, gen);
    desired.set(n, gen);
  });
  const r = await runDp([...opts.command, '--project', opts.root, '--json']);
  assert.equal(r.code, 0, `${opts.label}: rerun failed: ${r.stderr}`);
  const statuses = opts.statusOf(JSON.parse(r.stdout));
  for (const n of gens.names) {
    const expected = held.get(tableOf(n)) === desired.get(n) ? 'skipped' : 'built';
    assert.equal(statuses.get(tableOf(n)), expected, `${opts.label}: ${tableOf(n)} held generation ${held.get(tableOf(n))}, its file says ${desired.get(n)}`);
  }
  const after = await readTables(path.join(opts.root, 'test.duckdb'), opts.checks, `${opts.label} rerun`);
  for (const n of gens.names) {
    assert.equal(after.get(tableOf(n)), desired.get(n), `${opts.label}: after the rerun ${tableOf(n)} holds what its file says`);
    gens.atRest.set(n, desired.get(n)!);
  }
}

describe('kill -9 during dp transform', () => {
  it('leaves every table complete-old or complete-new with its state, and the next run builds exactly the rest', async () => {
    const MODELS = 14;
    const SLOW_ROWS = 400_000;
    const FAST_ROWS = 500;
    const names = Array.from({ length: MODELS }, (_, i) => `m${String(i + 1).padStart(2, '0')}`);
    const slow = (n: string) => Number(n.slice(1)) % 4 === 0;
    const rows = (n: string) => (slow(n) ? SLOW_ROWS : FAST_ROWS);
    const text = (n: string) => (gen: number) =>
      slow(n)
        ? `SELECT i AS id, ${gen} AS gen, md5(i::VARCHAR) AS h FROM range(${SLOW_ROWS}) t(i)\n`
        : `SELECT i AS id, ${gen} AS gen FROM range(${FAST_ROWS}) t(i)\n`;
    const root = makeProject({ 'project.yml': 'name: kill\ndatabase:\n  path: test.duckdb\n' });
    const gens = new Generations(names, (n, gen) => {
      const t = text(n)(gen);
      fs.mkdirSync(path.join(root, 'transform', 'main'), { recursive: true });
      fs.writeFileSync(path.join(root, 'transform', 'main', `${n}.sql`), t);
      return t;
    });
    gens.writeAll(1);
    assert.equal((await runDp(['transform', '--project', root])).code, 0);
    for (const n of names) gens.atRest.set(n, 1);
    const checks: TableCheck[] = names.map((n) => ({ table: `main.${n}`, stateKey: `main.${n}`, rows: rows(n), text: text(n) }));

    const scenario: KillScenario = {
      name: 'transform',
      progress: /^\[\d+\/\d+\]/,
      killPoint: (t) => ({ afterLines: randomInt(t.rng, 1, MODELS - 3), delayMs: randomInt(t.rng, 0, 40) }),
      async start(t) {
        gens.writeAll(t.index + 2);
        return spawnDp(['transform', '--project', root]);
      },
      async verify(t: Trial, outcome: KillOutcome) {
        const newGen = t.index + 2;
        const label = `trial ${t.index} (${outcome.point.afterLines} lines + ${outcome.point.delayMs} ms${outcome.finishedFirst ? ', finished first' : ''})`;
        const old = new Map(names.map((n) => [`main.${n}`, gens.atRest.get(n)!]));
        const held = await checkTables(path.join(root, 'test.duckdb'), checks, old, newGen, label);
        // A model reported built is durable.
        for (const line of outcome.lines) {
          const m = /\]\s+built\s+(\S+)/.exec(line);
          if (m) assert.equal(held.get(m[1]), newGen, `${label}: ${m[1]} was reported built`);
        }
        await undoAndRerun({
          root,
          gens,
          held,
          newGen,
          tableOf: (n) => `main.${n}`,
          command: ['transform'],
          statusOf: (json) => new Map((json as { results: Array<{ model: string; status: string }> }).results.map((r) => [r.model, r.status])),
          checks,
          label,
        });
      },
    };
    const outcomes = await runKillTrials(scenario, { seed: 11, trials: 3 });
    assert.ok(outcomes.some((o) => !o.finishedFirst), 'at least one trial killed a running transform');
  });
});

describe('kill -9 during dp seed', () => {
  it('leaves every seed table complete-old or complete-new with its state', async () => {
    const SEEDS = 8;
    const names = Array.from({ length: SEEDS }, (_, i) => `s${String(i + 1).padStart(2, '0')}`);
    const rows = (n: string) => (Number(n.slice(1)) % 3 === 0 ? 150_000 : 200);
    const text = (n: string) => (gen: number) => {
      const out = ['id,gen,label'];
      for (let i = 0; i < rows(n); i++) out.push(`${i},${gen},row${i}`);
      return out.join('\n') + '\n';
    };
    const root = makeProject({ 'project.yml': 'name: killseed\ndatabase:\n  path: test.duckdb\n' });
    const gens = new Generations(names, (n, gen) => {
      const t = text(n)(gen);
      fs.mkdirSync(path.join(root, 'seeds'), { recursive: true });
      fs.writeFileSync(path.join(root, 'seeds', `${n}.csv`), t);
      return t;
    });
    gens.writeAll(1);
    assert.equal((await runDp(['seed', '--project', root])).code, 0);
    for (const n of names) gens.atRest.set(n, 1);
    const checks: TableCheck[] = names.map((n) => ({ table: `seeds.${n}`, stateKey: `seeds.${n}`, rows: rows(n), text: text(n) }));

    const scenario: KillScenario = {
      name: 'seed',
      progress: /^\[\d+\/\d+\]/,
      killPoint: (t) => ({ afterLines: randomInt(t.rng, 0, SEEDS - 3), delayMs: randomInt(t.rng, 0, 60) }),
      async start(t) {
        gens.writeAll(t.index + 2);
        return spawnDp(['seed', '--project', root]);
      },
      async verify(t, outcome) {
        const newGen = t.index + 2;
        const label = `seed trial ${t.index} (${outcome.point.afterLines} lines + ${outcome.point.delayMs} ms${outcome.finishedFirst ? ', finished first' : ''})`;
        const old = new Map(names.map((n) => [`seeds.${n}`, gens.atRest.get(n)!]));
        const held = await checkTables(path.join(root, 'test.duckdb'), checks, old, newGen, label);
        for (const line of outcome.lines) {
          const m = /\]\s+built\s+(\S+)/.exec(line);
          if (m) assert.equal(held.get(m[1]), newGen, `${label}: ${m[1]} was reported loaded`);
        }
        await undoAndRerun({
          root,
          gens,
          held,
          newGen,
          tableOf: (n) => `seeds.${n}`,
          command: ['seed'],
          statusOf: (json) => new Map((json as Array<{ seed: string; status: string }>).map((r) => [r.seed, r.status])),
          checks,
          label,
        });
      },
    };
    const outcomes = await runKillTrials(scenario, { seed: 12, trials: 3 });
    assert.ok(outcomes.some((o) => !o.finishedFirst), 'at least one trial killed a running seed load');
  });
});

describe('kill -9 of dp serve during file saves', () => {
  it('leaves every file as one whole saved version, and every acknowledged save on disk', async () => {
    const FILES = 4;
    const SIZE = 400_000;
    const root = makeProject({ 'project.yml': 'name: killsave\ndatabase:\n  path: test.duckdb\n' });
    const fileNames = Array.from({ length: FILES }, (_, i) => `notes/f${i}.sql`);
    const version = (file: string, v: number) => {
      const head = `-- ${file} version ${v}\n`;
      return head + `SELECT ${v};\n`.padEnd(SIZE - head.length - 8, '-') + `-- end\n`;
    };
    for (const f of fileNames) {
      fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
      fs.writeFileSync(path.join(root, f), version(f, 0));
    }
    /** Per file: the highest version a 200 answered, and every version sent. */
    const acknowledged = new Map<string, number>(fileNames.map((f) => [f, 0]));
    let nextVersion = 1;
    let saves = 0;
    /** Settles the current trial's wait for its first acknowledged save (the kill counts from it). */
    let firstSave = () => {};

    const scenario: KillScenario = {
      name: 'file saves',
      progress: /^dp listening on /,
      killPoint: (t) => ({ afterLines: 1, delayMs: randomInt(t.rng, 150, 600) }),
      armWhen: () => new Promise<void>((resolve) => (firstSave = resolve)),
      async start() {
        return spawnDp(['serve', '--no-scheduler', '--project', root, '--port', '0']);
      },
      async drive(_t, child) {
        const url = await new Promise<string>((resolve) => onLines(child, (l) => /^dp listening on (\S+)/.test(l) && resolve(l.split(' ').pop()!)));
        const dead = () => child.exitCode !== null || child.signalCode !== null;
        // Two writers at once per file round, so saves overlap inside the server.
        while (!dead()) {
          await Promise.all(
            fileNames.map(async (f) => {
              const v = nextVersion++;
              try {
                const res = await fetch(`${url}/api/files/${f}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: version(f, v) }) });
                if (res.status === 200) {
                  saves++;
                  firstSave();
                  acknowledged.set(f, Math.max(acknowledged.get(f)!, v));
                }
                await res.arrayBuffer();
              } catch {
                /* the server died mid-request */
              }
            }),
          );
        }
      },
      async verify(t, outcome) {
        const label = `save trial ${t.index} (+${outcome.point.delayMs} ms)`;
        assert.ok(!outcome.finishedFirst, `${label}: the server ran until killed`);
        for (const f of fileNames) {
          const content = fs.readFileSync(path.join(root, f), 'utf8');
          const m = /^-- \S+ version (\d+)\n/.exec(content);
          assert.ok(m, `${label}: ${f} starts with a version header`);
          const v = Number(m[1]);
          assert.equal(content, version(f, v), `${label}: ${f} is exactly version ${v}, not half-written`);
          assert.ok(v >= acknowledged.get(f)!, `${label}: ${f} holds version ${v}, older than the acknowledged ${acknowledged.get(f)}`);
        }
        // Only the saved files are visible: an interrupted save leaves at most a hidden temp file.
        const visible = fs.readdirSync(path.join(root, 'notes')).filter((n) => !n.startsWith('.'));
        assert.deepEqual(visible.sort(), fileNames.map((f) => path.basename(f)).sort(), `${label}: no stray visible file`);
      },
    };
    await runKillTrials(scenario, { seed: 13, trials: 3 });
    assert.ok(saves > 0, 'saves were acknowledged before the kills');
  });
});
