#!/usr/bin/env node
// The dp command: runs the ahead-of-time compiled CLI in dist/ (built by `npm install`/`npm run build`).
//
// CommonJS on purpose (bin/package.json): libuv reads UV_THREADPOOL_SIZE once, when its thread
// pool starts, and Node 20 starts the pool while it loads an ES module entry. Here nothing has
// touched the pool yet, so the size set below holds. Every DuckDB call runs on one of these
// workers; dp keeps a quarter of them (at least 2) free of user queries for short work such as
// health checks, logins and token lookups (kernel/query-control.ts).
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

/** Workers when the environment does not set UV_THREADPOOL_SIZE: 12 for user queries, 4 kept for short work. */
const DEFAULT_THREADPOOL_SIZE = 16;
if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = String(DEFAULT_THREADPOOL_SIZE);

const root = join(__dirname, '..');
const entry = join(root, 'dist', 'kernel', 'cli.js');
if (!existsSync(entry)) {
  process.stderr.write(`error: dp is not built yet: run 'npm run build' in ${root}\n`);
  process.exit(1);
}
import(pathToFileURL(entry).href).then(
  ({ main }) => main(),
  (e) => {
    process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  },
);
