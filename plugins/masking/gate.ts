/**
 * Enforcement on demand (issue 29): the enforcer (enforce.ts and the modules beside it: plans,
 * rewrites, splices, result masks, final checks, derived policies; about 120 kB) is imported the
 * first time a masking policy exists when a query or a lookup needs it, not at every start. A
 * project without policies, the common case for a one-shot `dp tables` or `dp query`, never
 * loads it.
 *
 * Nothing is skipped that the enforcer would do: every statement is checked for the key schema
 * here, whatever the role and whether or not a policy exists; with no policy that masks, the
 * enforcer itself returns at once (no policy binds anyone, and nothing is derived from none).
 * Once it is loaded, every query goes through it, as before. A failed import fails the query.
 */
import type { Caller, DatabasePort, QueryContext } from '../../sdk/index.js';
import type { DerivedPolicy } from './derived.js';
import type { MaskingEnforcer } from './enforce.js';
import { KEY_SCHEMA, KeySchemaGuard } from './keys.js';
import type { PolicyStore } from './policies.js';

export class EnforcementGate {
  private enforcer: MaskingEnforcer | undefined;
  private loading: Promise<MaskingEnforcer> | undefined;
  private readonly keySchema: KeySchemaGuard;

  constructor(
    db: Pick<DatabasePort, 'parse'>,
    private readonly store: PolicyStore,
    /** Imports enforce.ts and makes the enforcer, sharing the gate's key-schema guard (index.ts). */
    private readonly make: (keySchema: KeySchemaGuard) => Promise<MaskingEnforcer>,
  ) {
    this.keySchema = new KeySchemaGuard(db);
  }

  /** Whether the enforcer's code has been imported (tests: a project without policies never does). */
  get loaded(): boolean {
    return this.enforcer !== undefined;
  }

  /** The enforcer, imported and made once. */
  private load(): Promise<MaskingEnforcer> {
    if (!this.loading) {
      this.loading = this.make(this.keySchema).then((enforcer) => (this.enforcer = enforcer));
      // A failed import is not kept: the next query tries again (and fails closed meanwhile).
      this.loading.catch(() => (this.loading = undefined));
    }
    return this.loading;
  }

  /** The enforcer when a policy masks anything (it is loaded for it), else undefined: nothing to enforce. */
  private async active(): Promise<MaskingEnforcer | undefined> {
    if (this.enforcer) return this.enforcer;
    await this.store.ensureLoaded();
    return this.store.masksAny() ? this.load() : undefined;
  }

  /** Loads the enforcer at start when the project has policies, so that no query waits for it. */
  async prepare(): Promise<void> {
    await this.active();
  }

  /** The beforeQuery tap: the key schema for everyone, then the enforcer when a policy masks. */
  async beforeQuery(q: QueryContext): Promise<void> {
    await this.keySchema.check(q);
    await (await this.active())?.enforce(q);
  }

  /** Columns of schema.table this caller sees masked (the `masking` service); the key table's are all masked. */
  async maskedColumns(caller: Caller, schema: string, table: string): Promise<string[]> {
    const enforcer = schema.toLowerCase() === KEY_SCHEMA ? await this.load() : await this.active();
    return enforcer ? enforcer.maskedColumns(caller, schema, table) : [];
  }

  /** Lower-case names of the columns any policy masks for this caller (the `masking` service). */
  async maskedColumnNames(caller: Caller): Promise<string[]> {
    return (await (await this.active())?.maskedColumnNames(caller)) ?? [];
  }

  /** The policies derived through lineage (none without a policy that masks). */
  async derived(): Promise<readonly DerivedPolicy[]> {
    return (await (await this.active())?.derived.current()) ?? [];
  }

  /** How many times policies were derived from lineage (tests). */
  get derivations(): number {
    return this.enforcer?.derived.stats.derivations ?? 0;
  }

  /** The catalog changed (a statement, a model build): relations and derived policies are read again. An enforcer not made yet reads them fresh. */
  forgetCatalog(): void {
    if (!this.enforcer) return;
    this.enforcer.relations.invalidate();
    this.enforcer.invalidateTargets();
    this.enforcer.derived.invalidate();
  }

  /** The database (re)opened: every cached rewrite and snapshot goes. */
  forgetAll(): void {
    if (!this.enforcer) return;
    this.enforcer.relations.invalidate();
    this.enforcer.invalidate();
  }
}
