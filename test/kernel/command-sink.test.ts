/**
 * A command run for a CLI client (kernel/remote-server.ts runWithSink: `POST /api/cli/run`, and
 * sdk/testing runCommand) sees the client's folder as process.cwd(), and nothing else does: not
 * the server between commands, not a check of what DuckDB will open, and not after a library
 * replaced process.cwd with a caching wrapper while such a command ran (graceful-fs does, loaded
 * by exceljs and unzipper when a spreadsheet is first read).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LOCAL_ADMIN } from '../../sdk/auth.js';
import type { App } from '../../kernel/app.js';
import { assertProjectFileReads } from '../../kernel/file-reads.js';
import { ownWorkingFolder } from '../../kernel/process-cwd.js';
import { runWithSink } from '../../kernel/remote-server.js';
import { bootApp, makeProject, tempDir } from '../helpers.js';

/** Runs `fn` as a command run for a client standing in `cwd`. */
function asClientIn<T>(cwd: string, fn: () => Promise<T>): Promise<T> {
  return runWithSink({ cwd, write: () => undefined }, false, LOCAL_ADMIN, fn);
}

describe('a command run for a CLI client', () => {
  let app: App;
  let root: string;
  let outside: string;
  before(async () => {
    root = makeProject({ 'project.yml': 'name: sink\n' });
    app = await bootApp(root);
    outside = tempDir('dp-outside-');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'not for the project\n');
  });
  after(async () => {
    await app?.close();
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it("resolves relative paths from the client's folder while it runs, and from the process's own after", async () => {
    const client = path.join(root, 'sub');
    assert.deepEqual(await asClientIn(client, async () => [process.cwd(), path.resolve('x.csv')]), [client, path.join(client, 'x.csv')]);
    assert.equal(process.cwd(), ownWorkingFolder());
  });

  it("judges a model's relative file path where DuckDB opens it, not from the client's folder", async () => {
    // A path that climbs from the process's folder to a file outside the project; from a client
    // folder as deep inside the project as it climbs, the same text would name a project file.
    const relative = path.relative(ownWorkingFolder(), path.join(outside, 'secret.txt'));
    const climbs = relative.split(path.sep).filter((part) => part === '..').length;
    const client = path.join(root, ...Array.from({ length: climbs }, (_, i) => `d${i}`));
    assert.ok(path.resolve(client, relative).startsWith(root + path.sep), 'the crafted client folder does not put the path inside the project');
    await assert.rejects(
      asClientIn(client, () => assertProjectFileReads(app.db, `SELECT * FROM read_text('${relative}')`, { root })),
      (e: Error & { code?: string }) => e.code === 'file_read_refused' && /outside the project/.test(e.message),
    );
  });
  it("keeps the client's folder and the process's own apart after a library replaced process.cwd with a wrapper that caches its first answer", async () => {
    const client = path.join(root, 'first');
    await asClientIn(client, async () => {
      // What graceful-fs's polyfills.js does when it is first loaded (here: inside a client's command).
      const original = process.cwd;
      let cached: string | null = null;
      process.cwd = () => (cached ??= original.call(process));
      process.cwd();
    });
    assert.equal(process.cwd(), ownWorkingFolder(), "the server's own folder became the first client's");
    const other = path.join(root, 'second');
    assert.equal(await asClientIn(other, async () => process.cwd()), other, "a later client got the first one's folder");
  });

});
