/**
 * The engine's memory limit (issue 10 point 11) and the database_locked message (issue 11
 * point 5): it names what holds the file, never an absolute path, and is given only when a
 * process holds it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { describeHolder, isLockConflict } from '../../kernel/database.js';
import { makeProject, REPO_ROOT, runCli, startServer, tempDir } from '../helpers.js';

describe('DuckDB memory limit', () => {
  it('defaults to half the machine, below DuckDB\'s own 80%', async () => {
    const s = await startServer(makeProject());
    try {
      const bytes = Number(await s.app.db.value("SELECT value::BIGINT FROM (SELECT current_setting('memory_limit') AS v, regexp_extract(v, '([0-9.]+)', 1)::DOUBLE * CASE WHEN v LIKE '%GiB' THEN 1073741824 WHEN v LIKE '%MiB' THEN 1048576 ELSE 1 END AS value)"));
      assert.ok(bytes <= os.totalmem() * 0.55 && bytes >= os.totalmem() * 0.45, `${bytes} of ${os.totalmem()}`);
    } finally {
      await s.close();
    }
  });

  it('takes DP_MEMORY_LIMIT, and refuses a malformed one', async () => {
    process.env.DP_MEMORY_LIMIT = '1GB';
    try {
      const s = await startServer(makeProject());
      try {
        assert.equal(await s.app.db.value("SELECT current_setting('memory_limit')"), '953.6 MiB');
      } finally {
        await s.close();
      }
      process.env.DP_MEMORY_LIMIT = 'lots';
      await assert.rejects(startServer(makeProject()), /DP_MEMORY_LIMIT/);
    } finally {
      delete process.env.DP_MEMORY_LIMIT;
    }
  });
});

describe('database_locked names the holder', () => {
  it('describes a process by its dp command, without options or paths', () => {
    assert.equal(describeHolder(process.pid)?.includes('/'), false);
    assert.equal(describeHolder(999_999_999), null);
  });

  it("says which 'dp' command holds the file", async () => {
    const root = makeProject();
    // A stand-in with the command line of `node …/bin/dp.js transform --env x`: it holds the file like a running transform.
    const dir = tempDir('dp-holder-');
    const holder = path.join(dir, 'dp.js');
    fs.writeFileSync(
      holder,
      `import { DuckDBInstance } from ${JSON.stringify(path.join(REPO_ROOT, 'node_modules/@duckdb/node-api/lib/index.js'))};
       const inst = await DuckDBInstance.create(${JSON.stringify(path.join(root, 'test.duckdb'))});
       process.stdout.write('ready\\n');
       setTimeout(() => inst.closeSync(), 60_000);`,
    );
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
    const child = spawn(process.execPath, [holder, 'transform', '--env', 'secret-looking-option'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
        child.on('exit', () => reject(new Error('holder exited')));
      });
      const r = runCli(['--project', root, '--json', 'transform']);
      assert.notEqual(r.code, 0);
      assert.match(r.stdout + r.stderr, /in use by another process \('dp transform', PID \d+\)/);
      assert.doesNotMatch(r.stdout + r.stderr, /most likely a running 'dp serve'/);
      assert.ok(!(r.stdout + r.stderr).includes(root), 'no absolute path');
      assert.ok(!(r.stdout + r.stderr).includes('secret-looking-option'), 'no options');
    } finally {
      child.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('an open that fails for another reason is not called locked', () => {
  it('tells DuckDB\'s lock refusal from errors that merely mention a lock or a block', () => {
    assert.equal(isLockConflict('IO Error: Could not set lock on file "/p/test.duckdb": Conflicting lock is held in /usr/bin/node (PID 42). See also https://duckdb.org/docs/connect/concurrency'), true);
    assert.equal(isLockConflict('Invalid Error: Failure while replaying WAL file "/p/test.duckdb.wal": mutex lock failed: Invalid argument'), false);
    assert.equal(isLockConflict('IO Error: Corrupt database file: computed checksum 1 does not match stored checksum 2 in block at location 12288'), false);
  });

  it('reports a corrupt database file as such, not as a file another process holds', async () => {
    const root = makeProject();
    const file = path.join(root, 'test.duckdb');
    const made = await DuckDBInstance.create(file);
    const conn = await made.connect();
    await conn.run('CREATE TABLE t AS SELECT range AS i FROM range(1000)');
    conn.closeSync();
    made.closeSync();
    // Overwrite the start of the first data block: DuckDB's checksum check refuses the file at open.
    const bytes = fs.readFileSync(file);
    for (let i = 12_288 + 8; i < 12_288 + 200; i++) bytes[i] ^= 0xff;
    fs.writeFileSync(file, bytes);
    await assert.rejects(startServer(root), (e: { code?: string; message?: string }) => {
      assert.equal(e.code, 'database_open_failed', String(e.message));
      assert.match(String(e.message), /Corrupt database file/);
      assert.doesNotMatch(String(e.message), /in use by another process/);
      return true;
    });
  });
});
