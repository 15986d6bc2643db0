/** Model file names, paths and text. */
import fs from 'node:fs';
import { badRequest, conflict, SAFE_NAME, type PluginContext } from '../../sdk/index.js';
import { configLine, isDirectiveLine } from './directives.js';
import { TRANSFORM_DIR } from './discovery.js';

/**
 * Longest model or schema name. A name is a file (or folder) name too, and the atomic write's
 * temp file adds 22 characters to it under the file system's 255-byte limit; 128 leaves room.
 */
export const MAX_NAME_LENGTH = 128;

export function checkName(value: string, field: string, what: string): void {
  if (value.length > MAX_NAME_LENGTH) {
    throw badRequest(`invalid_${field}`, `${what} is ${value.length} characters long; the limit is ${MAX_NAME_LENGTH}`, { field, max_length: MAX_NAME_LENGTH });
  }
  if (!SAFE_NAME.test(value)) {
    throw badRequest(`invalid_${field}`, `${what} '${value}' must start with a letter or underscore and hold only letters, digits and underscores`, { field });
  }
}

export function checkMaterialized(value: string): asserts value is 'table' | 'view' {
  if (value !== 'table' && value !== 'view') throw badRequest('invalid_materialized', `materialized must be 'table' or 'view', got '${value}'`, { field: 'materialized' });
}

export function modelPath(schema: string, name: string): string {
  return `${TRANSFORM_DIR}/${schema}/${name}.sql`;
}

/**
 * The text of a model file: a fresh `@config` line, then the SQL. `@config` lines already in the
 * SQL are dropped (the request's values win); other directives (@assert, @depends_on) are kept.
 */
export function modelFileText(sql: string, materialized: string, schema: string): string {
  const lines = sql.replace(/\r\n/g, '\n').split('\n');
  const directives = lines.filter((l) => isDirectiveLine(l) && !/^\s*--\s*@config\b/.test(l));
  const rest = lines.filter((l) => !isDirectiveLine(l));
  while (rest.length && rest[0].trim() === '') rest.shift();
  const body = rest.join('\n').trimEnd();
  return [configLine(materialized, schema), ...directives, body].join('\n') + '\n';
}

/** Refuses to overwrite an existing model file. */
export function assertAbsent(ctx: PluginContext, relativePath: string): void {
  if (fs.existsSync(ctx.project.resolve(relativePath))) {
    throw conflict('model_exists', `${relativePath} already exists`, { path: relativePath });
  }
}
