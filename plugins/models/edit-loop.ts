/**
 * The edit loop: `dp init` (a project that runs green), `dp validate` (every problem of the
 * project without building anything), `dp status` (what changed since the last build) and
 * `dp watch` (rebuild what a save touched, and everything downstream of it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { conflict, errorMessage, isDpError, badRequest, type PluginContext, type ProjectProblem, type ProjectValidator, type TransformSummary } from '../../sdk/index.js';
import { downstreamOf, keyOf, type ModelGraph } from './dag.js';
import { sha256, SEEDS_DIR, TRANSFORM_DIR, type ModelFile } from './discovery.js';
import type { ModelsEngine } from './service.js';
import { lineAt } from './sqltext.js';
import { catalogAndStates } from './on-target.js';
import { discoverUnitTests, staticProblems } from './unit-tests.js';

// ---------------------------------------------------------------- dp init

/** The scaffold, next to the plugin's source (dist/plugins/models → plugins/models/template). */
function templateDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, 'template'), path.resolve(here, '../../../plugins/models/template')]) {
    if (fs.existsSync(path.join(candidate, 'project.yml'))) return candidate;
  }
  throw new Error('the models plugin has no template folder');
}

/** Writes a new project into `target` (absolute); refuses a folder that already holds files. */
export function scaffoldProject(target: string): { path: string; files: string[] } {
  if (fs.existsSync(target) && fs.readdirSync(target).length > 0) {
    throw conflict('folder_not_empty', `${path.basename(target)} already holds files; dp init writes into a new or empty folder`, { folder: path.basename(target) });
  }
  const name = path.basename(target).replace(/[^A-Za-z0-9_-]/g, '_') || 'project';
  const source = templateDir();
  const files: string[] = [];
  const copy = (rel: string) => {
    const from = path.join(source, rel);
    if (fs.statSync(from).isDirectory()) {
      for (const entry of fs.readdirSync(from).sort()) copy(path.join(rel, entry));
      return;
    }
    // `gitignore` is stored without its dot so that the repository's own .gitignore rules do not apply to it.
    const out = rel === 'gitignore' ? '.gitignore' : rel;
    const text = fs.readFileSync(from, 'utf8').replaceAll('{{name}}', name);
    fs.mkdirSync(path.dirname(path.join(target, out)), { recursive: true });
    fs.writeFileSync(path.join(target, out), text);
    files.push(out.split(path.sep).join('/'));
  };
  fs.mkdirSync(target, { recursive: true });
  copy('');
  return { path: target, files: files.sort() };
}

// ---------------------------------------------------------------- dp validate

export interface ValidationReport {
  valid: boolean;
  problems: Array<ProjectProblem & { source: string }>;
}

/**
 * Every problem of the project, without building anything: each model's @config and parse,
 * its references (each with its line), duplicates and cycles, unit test files and their mocks,
 * then what each plugin contributed through PROJECT_VALIDATORS (contracts, metrics, streams).
 * project.yml itself was validated when the app booted.
 */
export async function validateProject(engine: ModelsEngine, validators: readonly ProjectValidator[]): Promise<ValidationReport> {
  const problems: ValidationReport['problems'] = [];
  const add = (source: string, p: ProjectProblem) => problems.push({ source, ...p });
  const files = await engine.discovery.modelFiles();
  for (const f of files) {
    for (const c of f.configProblems) add('models', { file: f.path, line: c.line, message: c.message });
    if (f.parseError) add('models', { file: f.path, ...(f.parseErrorLine ? { line: f.parseErrorLine } : {}), message: f.parseError });
  }
  let graph: ModelGraph | null = null;
  try {
    graph = await engine.graphOf(files, { ignoreConfigProblems: true });
  } catch (e) {
    if (!isDpError(e)) throw e;
    for (const p of graphProblems(e.code, e.message, e.details, files)) add('models', p);
  }
  const { tests, errors } = discoverUnitTests(engine.ctx);
  for (const e of errors) add('unit tests', { file: e.file, ...(e.line ? { line: e.line } : {}), message: stripWhere(e.message, e.file) });
  {
    for (const t of tests) for (const message of staticProblems(t, graph ?? files)) add('unit tests', { file: t.file, ...(t.line ? { line: t.line } : {}), message: stripWhere(message, t.file) });
  }
  for (const v of validators) {
    try {
      for (const p of await v.validate()) add(v.name, p);
    } catch (e) {
      add(v.name, { file: 'project.yml', message: `the ${v.name} validator failed: ${errorMessage(e)}` });
    }
  }
  problems.sort((a, b) => a.file.localeCompare(b.file) || (a.line ?? 0) - (b.line ?? 0));
  return { valid: problems.length === 0, problems };
}

/** "tests/unit/a.yml line 3: msg" → "msg" (the problem carries file and line itself). */
function stripWhere(message: string, file: string): string {
  return message.startsWith(file) ? message.replace(/^[^:]*(?: line \d+)?: /, '') : message;
}

/** The graph's single error as one problem per file (and per reference, with its line). */
function graphProblems(code: string, message: string, details: Record<string, unknown>, files: ModelFile[]): ProjectProblem[] {
  if (code === 'unknown_reference' && Array.isArray(details.references)) {
    return (details.references as Array<{ file: string; reference: string; hint?: string }>).map((r) => {
      const f = files.find((x) => x.path === r.file);
      const table = r.reference.split('.').pop()!.toLowerCase();
      const ref = f?.refs.find((x) => x.table.toLowerCase() === table && x.location !== null);
      const line = f && ref?.location != null ? lineAt(f.query, ref.location) : undefined;
      const depends = f && f.declaredDependsOn ? f.directiveLines[0] : undefined;
      return {
        file: r.file,
        ...((line ?? depends) ? { line: line ?? depends } : {}),
        message: `unknown reference '${r.reference}'${r.hint ? ` (${r.hint})` : ''}: not a model, seed, declared source or existing table`,
      };
    });
  }
  if (code === 'dependency_cycle' && Array.isArray(details.files)) {
    return (details.files as string[]).map((file) => ({ file, message }));
  }
  if (code === 'duplicate_model' && Array.isArray(details.files)) {
    return (details.files as string[]).map((file) => ({ file, message }));
  }
  if (Array.isArray(details.problems)) {
    return (details.problems as Array<{ file: string; line?: number; message: string }>).map((p) => ({ file: p.file, line: p.line, message: p.message }));
  }
  return [{ file: typeof details.file === 'string' ? details.file : TRANSFORM_DIR, message }];
}

// ---------------------------------------------------------------- dp status

export type BuildStatus = 'up_to_date' | 'new' | 'needs_rebuild' | 'changed' | 'stale';

export interface StatusReport {
  models: Array<{ model: string; path: string; materialized: string; status: BuildStatus; reason?: string }>;
  seeds: Array<{ seed: string; path: string; status: Exclude<BuildStatus, 'stale' | 'needs_rebuild'> }>;
}

/**
 * Compares the files with what the last builds recorded (`_service.model_state`): `new` (never
 * built), `needs_rebuild` (its table exists but no build of dp's made it from this SQL: a version
 * restore forgets the build state of what it replaced), `changed` (the file differs from the built one), `stale` (the file is unchanged but
 * something upstream changed or was rebuilt since), `up_to_date`.
 */
export async function projectStatus(ctx: PluginContext, engine: ModelsEngine): Promise<StatusReport> {
  const graph = await engine.graph();
  const [catalog, states] = await catalogAndStates(ctx);
  const seeds: StatusReport['seeds'] = engine.discovery.seedFiles().map((s) => {
    const stored = states.get(keyOf(s.full_name));
    const status = !stored || !catalog.has(keyOf(s.full_name)) ? 'new' : stored.content_hash === s.content_hash ? 'up_to_date' : 'changed';
    return { seed: s.full_name, path: s.path, status };
  });
  const seedStatus = new Map(seeds.map((s) => [keyOf(s.seed), s.status]));
  const out = new Map<string, StatusReport['models'][number]>();
  const upstreamToken = (name: string): string => {
    const k = keyOf(name);
    return states.get(k)?.state_hash ?? (catalog.get(k) ? `external:${catalog.get(k)!.signature}` : 'absent');
  };
  for (const m of graph.models) {
    const key = keyOf(m.info.full_name);
    const stored = states.get(key);
    const entry = { model: m.info.full_name, path: m.info.path, materialized: m.info.materialized };
    if (!stored && catalog.has(key)) {
      out.set(key, { ...entry, status: 'needs_rebuild', reason: 'its table was not built from this SQL (restored from a version, or made outside dp): rebuild it' });
      continue;
    }
    if (!stored || !catalog.has(key)) {
      out.set(key, { ...entry, status: 'new' });
      continue;
    }
    if (stored.content_hash !== m.file.content_hash || stored.materialized !== m.info.materialized) {
      out.set(key, { ...entry, status: 'changed' });
      continue;
    }
    const changedUp = m.upstreamModels.map((u) => out.get(u)!).find((u) => u.status !== 'up_to_date');
    const changedSeed = m.upstream.find((u) => seedStatus.has(keyOf(u)) && seedStatus.get(keyOf(u)) !== 'up_to_date');
    if (changedUp) out.set(key, { ...entry, status: 'stale', reason: `upstream ${changedUp.model} is ${changedUp.status.replace('_', ' ')}` });
    else if (changedSeed) out.set(key, { ...entry, status: 'stale', reason: `seed ${changedSeed} changed` });
    else {
      const accumulates = m.info.materialized === 'incremental' || m.info.materialized === 'scd2';
      const token = sha256([m.file.content_hash, m.info.materialized, ...m.upstream.map((u) => `${keyOf(u)}=${upstreamToken(u)}`).sort()].join('\n'));
      // Incremental and scd2 models run every time (see transform.ts); their stored hash is per run.
      if (!accumulates && stored.state_hash !== token) out.set(key, { ...entry, status: 'stale', reason: 'an upstream relation was rebuilt or changed since' });
      else out.set(key, { ...entry, status: 'up_to_date' });
    }
  }
  return { models: graph.models.map((m) => out.get(keyOf(m.info.full_name))!), seeds };
}

// ---------------------------------------------------------------- dp watch

export interface WatchRound {
  changed: string[];
  seeds: string[];
  summary: TransformSummary | null;
  error?: string;
  duration_ms: number;
}

/**
 * Watches transform/ and seeds/; after each burst of saves (debounced), reloads changed seeds and
 * rebuilds the changed models and everything downstream of them (selectors `name+`).
 */
export function watchProject(
  ctx: PluginContext,
  engine: ModelsEngine,
  onRound: (round: WatchRound) => void,
  options: { debounceMs?: number } = {},
): { close(): void; ready: Promise<void> } {
  const debounce = options.debounceMs ?? 60;
  let known = new Map<string, string>();
  let seedsKnown = new Map<string, string>();
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();
  let closed = false;
  const snapshot = async () => {
    known = new Map((await engine.discovery.modelFiles()).map((f) => [f.path, f.content_hash]));
    seedsKnown = new Map(engine.discovery.seedFiles().map((s) => [s.full_name, s.content_hash]));
  };
  const round = async () => {
    const started = performance.now();
    const changed: string[] = [];
    const seeds: string[] = [];
    try {
      const files = await engine.discovery.modelFiles();
      for (const f of files) if (known.get(f.path) !== f.content_hash) changed.push(f.full_name);
      known = new Map(files.map((f) => [f.path, f.content_hash]));
      const seedFiles = engine.discovery.seedFiles();
      for (const s of seedFiles) if (seedsKnown.get(s.full_name) !== s.content_hash) seeds.push(s.name);
      seedsKnown = new Map(seedFiles.map((s) => [s.full_name, s.content_hash]));
      if (!changed.length && !seeds.length) return;
      if (seeds.length) await engine.loadSeeds({ targets: seeds });
      const graph = await engine.graph();
      const targets = new Set(changed.map((c) => `${c}+`));
      // A reloaded seed rebuilds the models reading it (and their downstream).
      for (const m of graph.models) if (m.upstream.some((u) => seeds.some((s) => keyOf(u).endsWith(`.${keyOf(s)}`)))) targets.add(`${m.info.full_name}+`);
      const summary = targets.size ? await engine.transform({ targets: [...targets], trigger: 'watch' }) : null;
      onRound({ changed, seeds, summary, duration_ms: Math.round(performance.now() - started) });
    } catch (e) {
      onRound({ changed, seeds, summary: null, error: isDpError(e) ? e.message : errorMessage(e), duration_ms: Math.round(performance.now() - started) });
    }
  };
  const schedule = () => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      running = running.then(round);
    }, debounce);
  };
  const watchers: fs.FSWatcher[] = [];
  const ready = snapshot().then(() => {
    for (const dir of [TRANSFORM_DIR, SEEDS_DIR]) {
      const abs = ctx.project.resolve(dir);
      fs.mkdirSync(abs, { recursive: true });
      watchers.push(fs.watch(abs, { recursive: true }, schedule));
    }
  });
  return {
    ready,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}

/** A folder argument for dp init: relative to where dp runs; never empty. */
export function initTarget(folder: unknown): string {
  const text = String(folder ?? '').trim();
  if (!text) throw badRequest('invalid_folder', 'dp init needs a folder name', {});
  return path.resolve(process.cwd(), text);
}
