import path from 'node:path';

/** The save list of docs/decisions.md "Files": the specification's plus the TypeScript/JavaScript script extensions. */
export const SAVEABLE_EXTENSIONS = ['.sql', '.py', '.yml', '.yaml', '.dpnb', '.sqlfluff', '.ts', '.js', '.mjs'];

/**
 * Never listed, read or written through the API: secrets, the database, VCS internals,
 * dependencies, and `.dp/`, dp's own state folder (the project's user store and whatever dp
 * keeps there later).
 */
const HIDDEN_NAMES = new Set(['.git', 'node_modules', '.env', '.service-env', '.dp']);
const HIDDEN_PATTERNS = [/^\.env(\..+)?$/, /\.duckdb(\.wal)?$/, /\.tmp$/];

export function isHidden(name: string): boolean {
  if (name === '.env.example') return false;
  return HIDDEN_NAMES.has(name) || HIDDEN_PATTERNS.some((p) => p.test(name));
}

/** True when any segment of a project-relative path is hidden. */
export function isHiddenPath(rel: string): boolean {
  return rel.split('/').some((seg) => seg !== '' && isHidden(seg));
}

const LANGUAGES: Record<string, string> = {
  '.sql': 'sql',
  '.py': 'python',
  '.yml': 'yaml',
  '.yaml': 'yaml',
  '.dpnb': 'json',
  '.json': 'json',
  '.ts': 'typescript',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.md': 'markdown',
  '.csv': 'csv',
  '.sqlfluff': 'ini',
};

export function languageOf(file: string): string {
  return LANGUAGES[path.extname(file).toLowerCase()] ?? 'text';
}
