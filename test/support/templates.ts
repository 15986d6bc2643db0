/**
 * Fixtures built once per suite run and shared by every test file that needs them: a folder built
 * by `build` is kept under the OS temp dir, named by a key that changes when what built it
 * changes (the compiled code, the example, a server binary's version). A test file that finds it
 * copies it; one that does not builds it in a temporary folder of its own and renames that into
 * place, so files running at once never see a half-built template (when two build it at the same
 * time, the first rename wins and the other's copy is dropped).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const TEMPLATES_DIR = path.join(os.tmpdir(), 'dp-test-templates');

/** Templates not used for this long are removed when a new one is built (a suite run takes far less). */
const STALE_MS = 2 * 24 * 3600 * 1000;

/**
 * The suite run this process belongs to: scripts/test.mjs sets DP_TEST_RUN once for all its
 * files; a file run by `node --test` directly shares its runner's pid with its siblings. A
 * template whose content carries times (a built project's build and load times) is keyed on it,
 * so it is never older than the run: one reused across runs showed a model "built 1 h ago" where
 * a test read the time of a build made moments before.
 */
export function suiteRun(): string {
  return process.env.DP_TEST_RUN ?? `runner-${process.ppid}`;
}

/** A hash of the files under `dir` whose relative path `keep` accepts (names and contents, in a fixed order). */
export function hashTree(hash: crypto.Hash, dir: string, keep: (rel: string) => boolean = () => true): void {
  const walk = (rel: string) => {
    const entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && keep(child)) {
        hash.update(`${child}\0`);
        hash.update(fs.readFileSync(path.join(dir, child)));
        hash.update('\0');
      }
    }
  };
  if (fs.existsSync(dir)) walk('');
}

/**
 * Removes other templates of `name` nobody used for days, and what a killed build left (never the
 * one being made, never another name's).
 */
function pruneStale(name: string, keep: string, staleMs: number): void {
  for (const entry of fs.readdirSync(TEMPLATES_DIR)) {
    if (!(entry.startsWith(`${name}-`) || entry.startsWith(`.${name}-building-`)) || entry === keep) continue;
    const p = path.join(TEMPLATES_DIR, entry);
    try {
      if (Date.now() - fs.statSync(p).mtimeMs > staleMs) fs.rmSync(p, { recursive: true, force: true });
    } catch {
      // Another suite run removed or renamed it meanwhile.
    }
  }
}

/**
 * The folder of template `name` for `key`, built by `build(folder)` when no test file built it
 * yet. Never write into the returned folder: copy it (`fs.cpSync(template, dest, { recursive: true })`).
 */
export async function sharedTemplate(
  name: string,
  key: string,
  build: (folder: string) => Promise<void> | void,
  /** How long an unused template of this name is kept (a per-run template: a few hours). */
  staleMs = STALE_MS,
): Promise<string> {
  const final = path.join(TEMPLATES_DIR, `${name}-${key}`);
  if (fs.existsSync(final)) {
    // Marks it used, for pruneStale of later builds.
    fs.utimesSync(final, new Date(), new Date());
    return final;
  }
  fs.mkdirSync(TEMPLATES_DIR, { recursive: true });
  const staging = fs.mkdtempSync(path.join(TEMPLATES_DIR, `.${name}-building-`));
  try {
    await build(staging);
    try {
      fs.renameSync(staging, final);
    } catch (e) {
      // Another test file renamed its copy into place first: use that one.
      if (!['ENOTEMPTY', 'EEXIST'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  pruneStale(name, path.basename(final), staleMs);
  return final;
}
