import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import dotenv from 'dotenv';
import type { ProjectConfig, ProjectInfo } from '../sdk/config.js';
import { badRequest, DpError, notFound } from '../sdk/errors.js';
import { readYaml } from '../sdk/project-files.js';
import { resolveInside, resolveReadableInside, toProjectRelative, writeFileAtomic } from './paths.js';
import { validateProject } from './validators.generated.js';

export const PROJECT_FILE = 'project.yml';
export const ENV_FILE = '.env';
export const ACTIVE_ENV_FILE = '.service-env';



/** The kernel's view of the configuration: its own keys plus every key as written (after expansion). */
export interface KernelConfig extends ProjectConfig {
  /** Every top-level key as written (after ${VAR} expansion): plugins' parts are validated from here at boot. */
  raw: Record<string, unknown>;
}

export interface LoadedProject extends ProjectInfo {
  readonly config: KernelConfig;
  /** Every top-level key as written: `${VAR}` references unexpanded (for display). */
  readonly written: Record<string, unknown>;
  /** Line of a YAML path in project.yml (the nearest existing ancestor's), for error messages. */
  lineOf(pathParts: Array<string | number>): number | undefined;
  /** Variables read from .env. */
  readonly envVars: Record<string, string>;
  /** ${VAR} references that .env does not define. */
  readonly unresolvedVars: string[];
}

export function readEnvFile(root: string): Record<string, string> {
  const file = path.join(root, ENV_FILE);
  if (!fs.existsSync(file)) return {};
  return dotenv.parse(fs.readFileSync(file));
}

/** Replaces ${VAR} in every string of a parsed YAML value, from .env only. */
function expandVars(value: unknown, vars: Record<string, string>, unresolved: Set<string>): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
      if (Object.prototype.hasOwnProperty.call(vars, name)) return vars[name];
      unresolved.add(name);
      return whole;
    });
  }
  if (Array.isArray(value)) return value.map((v) => expandVars(v, vars, unresolved));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = expandVars(v, vars, unresolved);
    return out;
  }
  return value;
}

export function readActiveEnv(root: string): string | null {
  const file = path.join(root, ACTIVE_ENV_FILE);
  if (!fs.existsSync(file)) return null;
  const name = fs.readFileSync(file, 'utf8').trim();
  return name || null;
}

export function writeActiveEnv(root: string, name: string | null): void {
  const file = path.join(root, ACTIVE_ENV_FILE);
  if (name === null) fs.rmSync(file, { force: true });
  else writeFileAtomic(file, name + '\n');
}

/**
 * Reads and validates project.yml without choosing an environment; errors name the line and field.
 * A text read before, by this process or an earlier one (PROJECT_PARSE_CACHE), is not parsed
 * again: parsing the example's 2 kB of YAML cost every command and both processes of `dp serve`
 * 16–26 ms of CPU.
 */
export function readProjectFile(root: string): ParsedProject {
  const file = path.join(root, PROJECT_FILE);
  if (!fs.existsSync(file)) {
    throw notFound('project_not_found', `No ${PROJECT_FILE} in ${root}: pass --project <folder> or run dp inside a project`, { path: file });
  }
  const text = fs.readFileSync(file, 'utf8');
  if (lastParsed?.text === text) return parseProjectText(text);
  const sha256 = crypto.createHash('sha256').update(text).digest('hex');
  const kept = keptParse(root, text, sha256);
  if (kept) {
    lastParsed = { text, parsed: kept };
    return parseProjectText(text);
  }
  const parsed = parseProjectText(text);
  keepParse(root, sha256, parsed.raw);
  return parsed;
}

type ParsedProject = { raw: Record<string, unknown>; lineOf: (parts: Array<string | number>) => number | undefined };

/**
 * Where the keys parsed from project.yml survive the process (dp's hidden state folder), under the
 * SHA-256 of the text they were parsed from: a text with another hash is parsed again.
 */
export const PROJECT_PARSE_CACHE = path.join('.dp', 'project-yml-parse.json');
/** Bumped when what the cache holds changes; a file of another format is ignored. */
const PROJECT_PARSE_FORMAT = 1;

/** The kept parse of `text` (whose SHA-256 is `sha256`), with its lines found by parsing only when an error asks for one; null when there is none. */
function keptParse(root: string, text: string, sha256: string): ParsedProject | null {
  let kept: { format?: number; sha256?: string; raw?: unknown };
  try {
    kept = JSON.parse(fs.readFileSync(path.join(root, PROJECT_PARSE_CACHE), 'utf8'));
  } catch {
    return null;
  }
  const raw = kept.raw;
  if (kept.format !== PROJECT_PARSE_FORMAT || kept.sha256 !== sha256 || !raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  // Checked against the kernel's schema as a parse is: a damaged file, or keys the schema refuses, are not used.
  if (!validateProject(raw)) return null;
  let located: ((parts: Array<string | number>) => number | undefined) | undefined;
  return { raw: raw as Record<string, unknown>, lineOf: (parts) => (located ??= readYaml(text, PROJECT_FILE, 'invalid_project_yml').lineOf)(parts) };
}

/** Keeps a parse for the next process, when JSON holds it exactly (YAML's .inf or .nan would not survive); a folder dp cannot write to keeps nothing. */
function keepParse(root: string, sha256: string, raw: Record<string, unknown>): void {
  try {
    const json = JSON.stringify({ format: PROJECT_PARSE_FORMAT, sha256, raw });
    if (!isDeepStrictEqual(JSON.parse(json).raw, raw)) return;
    fs.mkdirSync(path.join(root, path.dirname(PROJECT_PARSE_CACHE)), { recursive: true });
    writeFileAtomic(path.join(root, PROJECT_PARSE_CACHE), json);
  } catch {
    // A read-only project folder: the next process parses again.
  }
}

/**
 * The last text parsed and its result: a CLI command reads project.yml for its command list and
 * again in App.boot, and parses it once. Each caller gets its own copy of `raw`.
 */
let lastParsed: { text: string; parsed: ParsedProject } | null = null;

/** project.yml's text parsed and shape-checked (the kernel's keys), for a file on disk or an edit before it is written. */
export function parseProjectText(text: string): ParsedProject {
  if (lastParsed?.text !== text) {
    const yaml = readYaml(text, PROJECT_FILE, 'invalid_project_yml');
    const raw = (yaml.value ?? {}) as Record<string, unknown>;
    if (typeof raw !== 'object' || Array.isArray(raw)) {
      throw badRequest('invalid_project_yml', `${PROJECT_FILE}: the top level must be a mapping of keys`, { file: PROJECT_FILE, line: 1 });
    }
    if (!validateProject(raw)) throw schemaError(validateProject.errors![0], [], yaml.lineOf);
    lastParsed = { text, parsed: { raw, lineOf: yaml.lineOf } };
  }
  const { raw, lineOf } = lastParsed.parsed;
  return { raw: structuredClone(raw), lineOf };
}

/** An ajv error as `project.yml line N: 'a.b' must be ...`; `prefix` is the path of the validated part. */
export function schemaError(
  e: { instancePath: string; message?: string; params?: Record<string, unknown> },
  prefix: string[],
  locate: (parts: Array<string | number>) => number | undefined,
): DpError {
  const inner = e.instancePath.split('/').slice(1).map((p) => (/^\d+$/.test(p) ? Number(p) : p.replace(/~1/g, '/').replace(/~0/g, '~')));
  const parts: Array<string | number> = [...prefix, ...inner];
  const line = locate(parts);
  const where = parts.length ? parts.join('.') : '(top level)';
  const allowed = e.params?.additionalProperty ? ` ('${String(e.params.additionalProperty)}')` : '';
  return badRequest('invalid_project_yml', `${PROJECT_FILE}${line ? ` line ${line}` : ''}: '${where}' ${e.message}${allowed}`, {
    file: PROJECT_FILE,
    line: line ?? null,
    field: where,
  });
}

export function buildConfig(raw: Record<string, unknown>, env: string | null): KernelConfig {
  const r = raw as Record<string, any>;
  const environments = (r.environments ?? {}) as ProjectConfig['environments'];
  let dbPath: string = r.database?.path ?? 'warehouse.duckdb';
  if (env) {
    if (!Object.prototype.hasOwnProperty.call(environments, env)) {
      throw badRequest('unknown_environment', `Unknown environment '${env}'. Available: ${Object.keys(environments).join(', ') || '(none)'}`, {
        environment: env,
        available: Object.keys(environments),
      });
    }
    dbPath = environments[env]?.database?.path ?? dbPath;
  }
  const timeouts = r.query?.timeout_seconds ?? {};
  const concurrent = r.query?.max_concurrent ?? {};
  return {
    name: r.name ?? 'dp project',
    database: { path: dbPath },
    connections: r.connections ?? {},
    environments,
    plugins: { disable: r.plugins?.disable ?? [], paths: r.plugins?.paths ?? [] },
    query: {
      timeout_seconds: { admin: timeouts.admin ?? 300, editor: timeouts.editor ?? 120, viewer: timeouts.viewer ?? 60 },
      default_limit: r.query?.default_limit ?? 1000,
      max_limit: r.query?.max_limit ?? 100000,
      max_concurrent: { admin: concurrent.admin ?? 8, editor: concurrent.editor ?? 8, viewer: concurrent.viewer ?? 8 },
      max_queued: r.query?.max_queued ?? 1000,
    },
    raw,
  };
}

/**
 * Loads a project: project.yml, ${VAR} expansion from .env, and the environment overlay
 * (explicit `env`, else the persistent one in .service-env, else none).
 */
export function loadProject(rootArg: string, envOverride?: string | null, text?: string): LoadedProject {
  const root = path.resolve(rootArg);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) {
    throw notFound('project_not_found', `Project folder '${rootArg}' does not exist`, { path: root });
  }
  const { raw, lineOf } = text === undefined ? readProjectFile(root) : parseProjectText(text);
  const envVars = readEnvFile(root);
  const unresolved = new Set<string>();
  const expanded = expandVars(raw, envVars, unresolved) as Record<string, unknown>;
  const env = envOverride ?? readActiveEnv(root);
  let config: KernelConfig;
  try {
    config = buildConfig(expanded, env);
  } catch (e) {
    if (e instanceof DpError && e.code === 'unknown_environment' && !envOverride) {
      throw badRequest('unknown_environment', `${ACTIVE_ENV_FILE} names environment '${env}', which project.yml does not define: run 'dp env reset' or 'dp env use <name>'`, e.details);
    }
    throw e;
  }
  return {
    root,
    env,
    config,
    written: raw,
    envVars,
    unresolvedVars: [...unresolved],
    lineOf,
    resolve: (p: string) => resolveInside(root, p),
    resolveReadable: (p: string) => resolveReadableInside(root, p),
    relative: (p: string) => toProjectRelative(root, p),
    writeFile: (p: string, content: string | Buffer) => {
      const abs = resolveInside(root, p);
      writeFileAtomic(abs, content);
      return abs;
    },
  };
}

/** The database path as the kernel opens it: absolute, or ':memory:'. */
export function databaseFile(project: ProjectInfo): string {
  const p = project.config.database.path;
  if (p === ':memory:') return p;
  return path.isAbsolute(p) ? p : path.join(project.root, p);
}
