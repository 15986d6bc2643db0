/**
 * The DuckDB adapter, split along its seams in kernel/database/: connection.ts (pooled
 * connections, catalog lookups), duck-database.ts (the DatabasePort: open, pool, drain, parse),
 * sandbox.ts, values.ts, errors.ts. This module keeps the old import path.
 */
export { runMigrations } from './migrations.js';
export { CatalogLookups, Connection, type WriteObserver } from './database/connection.js';
export { DuckDatabase, type DatabaseOptions, type DrainReport } from './database/duck-database.js';
export { describeHolder, isLockConflict, translateDbError } from './database/errors.js';
export { configuredMemoryLimit, defaultMemoryLimit, type EngineSandbox } from './database/sandbox.js';
