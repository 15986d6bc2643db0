/**
 * User-defined scalar macros. DuckDB expands a macro after the rewrite, so a macro whose body
 * reads a table (`CREATE MACRO m() AS (SELECT max(email) FROM crm.customers)`) would read it
 * unmasked; the enforcer refuses calls to such macros for callers bound by a policy.
 *
 * Listing functions is slow in DuckDB (duckdb_functions() takes tens of milliseconds), so the
 * built-in names are read once, and the user macros only when a query calls a function that
 * is not built in; that list is kept until an event-bus event (model builds etc.) or until a
 * query calls a name it does not know.
 */
import type { DatabasePort } from '../../sdk/index.js';

export class MacroCatalog {
  private builtinNames: Promise<Set<string>> | null = null;
  private userMacros: Promise<Map<string, string[]>> | null = null;

  constructor(private readonly db: DatabasePort) {}

  invalidate(): void {
    this.userMacros = null;
  }

  /** Lower-case names of DuckDB's own functions and macros. */
  builtins(): Promise<Set<string>> {
    if (!this.builtinNames) {
      const load = this.db
        .all<{ f: string }>('SELECT DISTINCT lower(function_name) AS f FROM duckdb_functions() WHERE internal')
        .then((rows) => new Set(rows.map((r) => r.f)));
      load.catch(() => (this.builtinNames = null));
      this.builtinNames = load;
    }
    return this.builtinNames;
  }

  /** Lower-case name → the definitions of the user macros of that name (any schema). */
  macros(fresh = false): Promise<Map<string, string[]>> {
    if (fresh || !this.userMacros) {
      const load = this.db
        .all<{ f: string; d: string }>(
          "SELECT lower(function_name) AS f, macro_definition AS d FROM duckdb_functions() WHERE NOT internal AND function_type = 'macro' AND macro_definition IS NOT NULL",
        )
        .then((rows) => {
          const out = new Map<string, string[]>();
          for (const r of rows) out.set(r.f, [...(out.get(r.f) ?? []), r.d]);
          return out;
        });
      load.catch(() => (this.userMacros = null));
      this.userMacros = load;
    }
    return this.userMacros;
  }
}
