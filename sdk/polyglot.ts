/**
 * `@polyglot-sql/sdk` (the SQL transpiler and ClickHouse parser of the ClickHouse target and of
 * native models), loaded once per process on first use, with V8's baseline WebAssembly compiler
 * only (`--liftoff-only`).
 *
 * Why: the package is 22 MB of WebAssembly. Under V8's default dynamic tiering its hot functions
 * are recompiled by TurboFan in background threads, and for functions that large that costs about
 * 4 s of CPU per process (the process cannot even exit before it ends), while a transpile stays
 * slower than on Liftoff's code until it does. Measured on the 2-core machine, importing it and
 * transpiling one query: 3.2 s wall and 5.0 s of CPU by default, 0.5 s and 0.6 s Liftoff only;
 * 20,000 distinct transpiles: 6.5 s by default, 4.1 s Liftoff only (bench/README.md "The SQL
 * transpiler's WebAssembly"). The flag is process-wide: from then on no WebAssembly of the process
 * is tiered up to TurboFan. The only other module a dp process compiles, undici's HTTP parser, is
 * small (and checked: fetches before, during and after the switch).
 */
import v8 from 'node:v8';

type Polyglot = typeof import('@polyglot-sql/sdk');

let loading: Promise<Polyglot> | null = null;

/** The transpiler's module (imported on the first call; every later call gets the same one). */
export function loadPolyglot(): Promise<Polyglot> {
  if (!loading) {
    v8.setFlagsFromString('--liftoff-only');
    loading = import('@polyglot-sql/sdk');
  }
  return loading;
}
