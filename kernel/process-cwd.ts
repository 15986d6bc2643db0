/**
 * The process's own working folder: what DuckDB and the file system resolve relative paths
 * against. While a relayed CLI client's command runs, kernel/remote-server.ts makes
 * `process.cwd()` answer that client's folder (so a handler resolves the client's relative
 * arguments where the client stands); a check of what DuckDB will open uses this one instead.
 * Bound at this module's first import, before any command runs.
 */
export const ownWorkingFolder: () => string = process.cwd.bind(process);
