/**
 * Reading the project folder the same way everywhere: one walker (one rule for hidden names,
 * symlinks checked like `ctx.project.resolve`), one YAML reader with line numbers, one
 * ajv-error-to-field translation, one notebook reader.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Document } from 'yaml';
import type { ProjectInfo } from './config.js';
import { badRequest } from './errors.js';
import { validateJsonSchema } from './json-schema-check.generated.js';
import { yaml } from './yaml.js';

// ---------------------------------------------------------------- walking

/** Dot-named project files a person edits, listed although their names start with a dot. */
const VISIBLE_DOT_NAMES = new Set(['.env.example', '.gitignore', '.sqlfluff']);

/**
 * The one rule for names a walk skips: anything starting with a dot (tool state, editor lock
 * and backup files, `.git`, `.env` and its variants) except the few project files above, plus
 * dependencies, database files and temp files. Secrets and databases are never listed.
 */
export function isHiddenName(name: string): boolean {
  if (VISIBLE_DOT_NAMES.has(name)) return false;
  return name.startsWith('.') || name === 'node_modules' || /\.duckdb(\.wal)?$|\.tmp$/.test(name);
}

export interface ProjectEntry {
  /** The entry's name. */
  name: string;
  /** Project-relative path with forward slashes (a symlink keeps its own path, not its target's). */
  path: string;
  /** Absolute path inside the project (a symlink's own path). */
  abs: string;
  type: 'file' | 'directory';
  /** Bytes (files only). */
  size?: number;
  /** Modification time and inode (files only): callers that cache per file need no second stat. */
  mtimeMs?: number;
  ino?: number;
}

/** A node of the files tree (no absolute path: it goes into API responses). */
export interface ProjectTreeNode {
  name: string;
  path: string;
  type: 'file' | 'directory';
  size?: number;
  children?: ProjectTreeNode[];
}

export interface WalkOptions {
  /** Descend into subfolders (default true). */
  recursive?: boolean;
  /** Keep only files whose name ends with one of these (case-insensitive), e.g. ['.sql']. */
  extensions?: string[];
}

type ProjectPaths = Pick<ProjectInfo, 'root' | 'resolve'>;

/**
 * The walk itself: entries of `dir` (project-relative; '' or '.' for the root), hidden names
 * skipped, directories before files and each group by name. A symlink is followed only when
 * `project.resolve` accepts its path (its target is inside the project) and, for a folder,
 * when that folder is not already being walked (no loops). A missing `dir` has no entries.
 */
let collator: Intl.Collator | undefined;
/**
 * The order of `localeCompare`, from one collator: about ten times faster on folders of thousands
 * of files. Made on the first walk: creating it loads ICU's collation data, about 8 ms that a
 * process which never walks the project (`dp tables`, `dp query`) would pay at its start.
 */
const byName = (): Intl.Collator => (collator ??= new Intl.Collator());

function walkDir(project: ProjectPaths, dir: string, options: WalkOptions, visit: (entry: ProjectEntry, depth: number) => boolean): void {
  const start = dir === '' || dir === '.' ? project.root : project.resolve(dir);
  if (!fs.existsSync(start) || !fs.statSync(start).isDirectory()) return;
  const rootReal = fs.realpathSync(project.root);
  const exts = options.extensions?.map((e) => e.toLowerCase());
  const walking = new Set<string>();
  const startRel = start === project.root ? '' : path.relative(rootReal, start).split(path.sep).join('/');
  const recurse = (abs: string, relDir: string, depth: number) => {
    const real = fs.realpathSync(abs);
    if (walking.has(real)) return;
    walking.add(real);
    const entries = fs.readdirSync(abs, { withFileTypes: true }).filter((e) => !isHiddenName(e.name));
    const typed: Array<{ entry: ProjectEntry; stat: fs.Stats }> = [];
    for (const e of entries) {
      const full = path.join(abs, e.name);
      const rel = relDir ? `${relDir}/${e.name}` : e.name;
      let stat: fs.Stats;
      try {
        if (e.isSymbolicLink()) project.resolve(rel);
        stat = fs.statSync(full);
      } catch {
        continue; // a symlink out of the project, a dangling one, or an entry gone meanwhile
      }
      if (stat.isDirectory()) typed.push({ entry: { name: e.name, path: rel, abs: full, type: 'directory' }, stat });
      else if (stat.isFile() && (!exts || exts.some((x) => e.name.toLowerCase().endsWith(x)))) {
        typed.push({ entry: { name: e.name, path: rel, abs: full, type: 'file', size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino }, stat });
      }
    }
    typed.sort((a, b) => Number(b.entry.type === 'directory') - Number(a.entry.type === 'directory') || byName().compare(a.entry.name, b.entry.name));
    for (const { entry } of typed) {
      const descend = visit(entry, depth);
      if (entry.type === 'directory' && descend && options.recursive !== false) recurse(entry.abs, entry.path, depth + 1);
    }
    walking.delete(real);
  };
  recurse(start, startRel, 0);
}

/** Every file under `dir` (project-relative), sorted by path; see `walkDir` for the rules. */
export function walkProjectFiles(project: ProjectPaths, dir: string, options: WalkOptions = {}): ProjectEntry[] {
  const out: ProjectEntry[] = [];
  walkDir(project, dir, options, (entry) => {
    if (entry.type === 'file') out.push(entry);
    return true;
  });
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The folder tree under `dir`: folders first, then files, each by name (the files API's tree). */
export function projectTree(project: ProjectPaths, dir = ''): ProjectTreeNode[] {
  const top: ProjectTreeNode[] = [];
  const stack: ProjectTreeNode[][] = [top];
  walkDir(project, dir, {}, (entry, depth) => {
    stack.length = depth + 1;
    const node: ProjectTreeNode =
      entry.type === 'directory' ? { name: entry.name, path: entry.path, type: 'directory', children: [] } : { name: entry.name, path: entry.path, type: 'file', size: entry.size };
    stack[depth].push(node);
    if (node.children) stack[depth + 1] = node.children;
    return true;
  });
  return top;
}

// ---------------------------------------------------------------- YAML

export interface YamlReadResult {
  /** The parsed value (plain JS). */
  value: unknown;
  doc: Document;
  /** The line (1-based) of a path in the document, or of its nearest existing parent. */
  lineOf(pathParts: Array<string | number>): number | undefined;
}

/**
 * Parses YAML text, throwing DpError 400 `code` (default `invalid_yaml`) that names the file
 * and line of the first syntax error: "contracts/a.yml line 3: ...".
 */
export function readYaml(text: string, file: string, code = 'invalid_yaml'): YamlReadResult {
  const counter = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter: counter, prettyErrors: true });
  if (doc.errors.length > 0) {
    const err = doc.errors[0];
    const line = err.linePos?.[0]?.line;
    throw badRequest(code, `${file}${line ? ` line ${line}` : ''}: ${err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`, {
      file,
      path: file,
      line: line ?? null,
    });
  }
  return {
    value: doc.toJS(),
    doc,
    lineOf(pathParts) {
      for (let n = pathParts.length; n >= 0; n--) {
        const node = doc.getIn(pathParts.slice(0, n), true) as { range?: [number, number, number] } | undefined;
        if (node && node.range) return counter.linePos(node.range[0]).line;
      }
      return undefined;
    },
  };
}

/**
 * YAML text of a plain value, from the bundled yaml package (sdk/yaml.ts): a plugin that writes
 * YAML (a generated CI workflow) does not load the package's 80 modules a second time.
 */
export function toYaml(value: unknown, options: { lineWidth?: number } = {}): string {
  return yaml.stringify(value, options);
}

// ---------------------------------------------------------------- ajv errors

export interface AjvFieldError {
  /** Dotted path of the offending field (`streams.daily.retries`), '' for the top level. */
  field: string;
  /** The path as parts, for `lineOf` (numbers for array indexes). */
  parts: Array<string | number>;
  /** A sentence about the field: "missing required property 'model'", "'severity' must be one of error, warn". */
  message: string;
}

/**
 * Why `schema` is not a valid JSON Schema (draft-07, ajv's default), as ajv's `errorsText` words
 * it, or null when it is one. The meta-schema's validator is compiled by the build
 * (json-schema-check.generated.js), so a check costs no compile at a process's first call.
 */
export function jsonSchemaProblem(schema: unknown): string | null {
  if (validateJsonSchema(schema)) return null;
  return (validateJsonSchema.errors ?? []).map((e) => `data${e.instancePath} ${e.message}`).join(', ') || 'not a JSON Schema';
}

/**
 * A validator compiled on its first call, not when its module loads: an ajv compile costs
 * milliseconds, and a plugin's module loads for commands that never read the files it checks
 * (activation on demand, docs/plugins.md). `errors` is set after each call, as ajv's own.
 *
 *   const validateContract = compileOnFirstUse(() => new Ajv({ strict: false }).compile(contractSchema));
 */
export function compileOnFirstUse<T = unknown>(compile: () => ValidateFunction<T>): ValidateFunction<T> {
  let compiled: ValidateFunction<T> | undefined;
  const validate = function (this: unknown, ...args: Parameters<ValidateFunction<T>>) {
    compiled ??= compile();
    const ok = compiled.apply(this, args);
    validate.errors = compiled.errors;
    return ok;
  } as ValidateFunction<T>;
  return validate;
}

/**
 * One ajv error as a field and a sentence: a missing or unknown property names that property
 * (not its parent), an enum lists its values.
 */
export function ajvFieldError(error: ErrorObject): AjvFieldError {
  const parts = error.instancePath
    .split('/')
    .slice(1)
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p.replace(/~1/g, '/').replace(/~0/g, '~')));
  const where = parts.join('.');
  const params = error.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
  if (error.keyword === 'required' && params.missingProperty) {
    return { field: where ? `${where}.${params.missingProperty}` : params.missingProperty, parts: [...parts, params.missingProperty], message: `missing required property '${params.missingProperty}'` };
  }
  if (error.keyword === 'additionalProperties' && params.additionalProperty) {
    return { field: where ? `${where}.${params.additionalProperty}` : params.additionalProperty, parts: [...parts, params.additionalProperty], message: `unknown property '${params.additionalProperty}'` };
  }
  if (error.keyword === 'enum' && params.allowedValues) {
    return { field: where, parts, message: `'${where}' must be one of ${params.allowedValues.join(', ')}` };
  }
  return { field: where, parts, message: `'${where || '(top level)'}' ${error.message ?? 'is invalid'}` };
}

// ---------------------------------------------------------------- notebooks

export interface NotebookCell {
  /** `sql`, `code`, `markdown`, `ingest` ... as written. */
  type: string;
  /** The cell's text (a list of lines joined). */
  source: string;
  /** The name later cells use for this cell's result (notebooks plugin), when it has one. */
  id?: string;
}

/**
 * Reads a `.dpnb` notebook (JSON `{"cells": [{type, source}]}`), throwing DpError 400
 * `invalid_notebook` naming the file when it is not one.
 */
export function readNotebook(text: string, file: string): { cells: NotebookCell[] } {
  let json: { cells?: unknown };
  try {
    json = JSON.parse(text);
  } catch {
    throw badRequest('invalid_notebook', `${file}: a notebook is JSON {"cells": [...]}`, { path: file });
  }
  if (!json || typeof json !== 'object' || !Array.isArray(json.cells)) throw badRequest('invalid_notebook', `${file}: a notebook needs a "cells" list`, { path: file });
  return {
    cells: json.cells.map((c: { type?: unknown; source?: unknown; id?: unknown }) => ({
      type: String(c?.type ?? ''),
      source: Array.isArray(c?.source) ? c.source.join('') : String(c?.source ?? ''),
      ...(typeof c?.id === 'string' ? { id: c.id } : {}),
    })),
  };
}
