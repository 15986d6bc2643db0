/**
 * Disk full (issue 34.4), on a real small tmpfs: a version create, a backup and a model build that
 * run out of space answer 507 `no_space_left` (or say "No space left" in the model's error) with no
 * machine path, and leave nothing of what they wrote (no temporary version folder or backup copy).
 * Mounting needs root; without it the test is skipped.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer, type TestServer } from '../helpers.js';

const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-diskfull-'));
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mountPoint]).status === 0;

describe('disk full', { skip: mounted ? false : 'cannot mount a tmpfs here (needs root): the disk-full test is skipped' }, () => {
  const root = path.join(mountPoint, 'project');
  let s: TestServer;
  const filler = path.join(mountPoint, 'filler');

  before(async () => {
    fs.mkdirSync(path.join(root, 'transform/marts'), { recursive: true });
    fs.writeFileSync(path.join(root, 'project.yml'), 'name: full\ndatabase:\n  path: full.duckdb\n');
    fs.writeFileSync(path.join(root, 'transform/marts/small.sql'), 'SELECT 1 AS x\n');
    fs.writeFileSync(path.join(root, 'transform/marts/big.sql'), 'SELECT i, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS h FROM range(400000) r(i)\n');
    s = await startServer(root);
    await s.app.db.run('CREATE TABLE main.data AS SELECT i, md5(i::VARCHAR) AS h FROM range(60000) r(i)');
    await s.app.db.checkpoint();
    // Leave about 256 KB free: enough to answer, not enough to copy the data anywhere.
    const free = fs.statfsSync(mountPoint);
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free.bavail * free.bsize - 256 * 1024)));
  });

  after(async () => {
    await s?.close();
    spawnSync('umount', [mountPoint]);
    fs.rmSync(mountPoint, { recursive: true, force: true });
  });

  it('version create and backup answer 507 no_space_left without a path, and leave no partial copy', async () => {
    const v = await s.request('POST', '/api/versions', {});
    assert.equal(v.status, 507, v.text);
    assert.equal(v.body.error.code, 'no_space_left');
    assert.match(v.body.error.message, /no space left/i);
    assert.ok(!v.text.includes(mountPoint), 'no machine path in the answer');
    assert.deepEqual(fs.readdirSync(path.join(root, '_snapshots')), [], 'no temporary version folder left');
    assert.deepEqual((await s.request('GET', '/api/versions')).body, []);

    const b = await s.request('POST', '/api/backup', {});
    assert.equal(b.status, 507, b.text);
    assert.equal(b.body.error.code, 'no_space_left');
    assert.ok(!b.text.includes(mountPoint));
    assert.deepEqual(fs.readdirSync(path.join(root, '_backups')).filter((n) => n !== 'manifest.json'), [], 'no partial backup copy left');
  });

  it('a model build that fills the disk says so without a path, the run goes on, and with room again all works', async () => {
    const r = await s.request('POST', '/api/transform', { targets: ['marts.big'] });
    assert.equal(r.status, 200, r.text);
    const big = r.body.results.find((x: { model: string }) => x.model === 'marts.big');
    assert.equal(big.status, 'error');
    assert.match(big.error, /no space left/i);
    assert.ok(!JSON.stringify(r.body).includes(mountPoint), `no machine path: ${big.error}`);
    assert.equal((await s.request('POST', '/api/query', { sql: 'SELECT count(*) FROM main.data' })).status, 200, 'the database still answers');
    fs.rmSync(filler);
    assert.equal((await s.request('POST', '/api/transform', { targets: ['marts.small'] })).body.status, 'success');
    assert.equal((await s.request('POST', '/api/versions', {})).status, 200);
    assert.equal((await s.request('POST', '/api/backup', {})).status, 200);
  });
});
