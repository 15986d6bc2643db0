/**
 * Masking policies in `_service.masking_policies` (docs/decisions.md "Masking policy"). The store keeps
 * every policy in memory with a version number that changes on every write, so the rewrite
 * cache can key on it.
 */
import crypto from 'node:crypto';
import { badRequest, conflict, type DatabasePort, isRole, notFound, ROLES } from '../../sdk/index.js';
import type { MaskingPolicy } from './api-types.js';
import type { MethodCatalog } from './catalog.js';

export type { MaskingPolicy };

/** Lifts masking of one column, in particular one masked through lineage (admin only, with a reason). */
export const DECLASSIFY = 'none';

export type PolicyInput = Partial<Omit<MaskingPolicy, 'id' | 'created_at'>>;

export const DEFAULT_EXEMPT_ROLES = ['admin'];

export const MIGRATIONS = [
  {
    id: 'masking-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.masking_policies (
     id VARCHAR PRIMARY KEY,
     schema_name VARCHAR NOT NULL,
     table_name VARCHAR NOT NULL,
     column_name VARCHAR NOT NULL,
     method VARCHAR NOT NULL,
     method_config JSON,
     condition_column VARCHAR,
     condition_value VARCHAR,
     exempted_roles JSON,
     created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
   )`,
  },
  // A table of its own rather than an ALTER of the policies table: DuckDB fails to replay an ALTER TABLE from the WAL of a file reopened in the same process.
  { id: 'masking-002', sql: 'CREATE TABLE IF NOT EXISTS _service.masking_reasons (policy_id VARCHAR PRIMARY KEY, reason VARCHAR NOT NULL)' },
];

/** JSON schema of a policy body (POST); PUT uses the same properties, none required. */
export const policyProperties = {
  schema_name: { type: 'string', minLength: 1, description: 'Schema of the masked table' },
  table_name: { type: 'string', minLength: 1, description: 'Masked table (or view)' },
  column_name: { type: 'string', minLength: 1, description: 'Masked column' },
  method: { type: 'string', minLength: 1, description: 'One of the methods GET /api/masking/methods lists' },
  method_config: { type: 'object', description: "Method settings; see the method's config_schema" },
  condition_column: { type: ['string', 'null'], minLength: 1, description: 'Mask only rows where this column equals condition_value' },
  condition_value: { type: ['string', 'null'], description: 'Value of condition_column that triggers masking' },
  exempted_roles: { type: 'array', items: { type: 'string' }, uniqueItems: true, description: 'Roles that see raw values (default ["admin"])' },
  reason: { type: ['string', 'null'], description: "Why the column is declassified (required with method 'none', which only admins may set)" },
} as const;

const REQUIRED = ['schema_name', 'table_name', 'column_name', 'method'] as const;

function asText(v: unknown): string {
  if (v == null) return '';
  return String(v);
}

function parseJson<T>(v: unknown, fallback: T): T {
  if (v == null) return fallback;
  if (typeof v !== 'string') return v as T;
  try {
    return JSON.parse(v) as T;
  } catch {
    return fallback;
  }
}

export class PolicyStore {
  private policies: MaskingPolicy[] = [];
  private versionCounter = 0;
  private loaded = false;

  constructor(
    private readonly db: () => DatabasePort,
    private readonly catalog: MethodCatalog,
  ) {}

  /** Changes on every write and reload; part of the rewrite cache key. */
  get version(): number {
    return this.versionCounter;
  }

  async load(): Promise<void> {
    const rows = await this.db().all(
      `SELECT id, schema_name, table_name, column_name, method, CAST(method_config AS VARCHAR) AS method_config,
              condition_column, condition_value, CAST(exempted_roles AS VARCHAR) AS exempted_roles, r.reason,
              strftime(created_at, '%Y-%m-%d %H:%M:%S') AS created_at
         FROM _service.masking_policies p LEFT JOIN _service.masking_reasons r ON r.policy_id = p.id ORDER BY created_at, id`,
    );
    this.policies = rows.map((r) => ({
      id: asText(r.id),
      schema_name: asText(r.schema_name),
      table_name: asText(r.table_name),
      column_name: asText(r.column_name),
      method: asText(r.method),
      method_config: parseJson<Record<string, unknown>>(r.method_config, {}),
      condition_column: r.condition_column == null ? null : asText(r.condition_column),
      condition_value: r.condition_value == null ? null : asText(r.condition_value),
      exempted_roles: parseJson<string[]>(r.exempted_roles, [...DEFAULT_EXEMPT_ROLES]),
      reason: r.reason == null ? null : asText(r.reason),
      created_at: asText(r.created_at),
    }));
    this.versionCounter++;
    this.loaded = true;
  }

  /** Loads once: one-shot CLI commands never run the start callbacks that load the server's copy. */
  async ensureLoaded(): Promise<void> {
    if (!this.loaded) await this.load();
  }

  list(): MaskingPolicy[] {
    return this.policies.map((p) => ({ ...p, method_config: { ...p.method_config }, exempted_roles: [...p.exempted_roles] }));
  }

  /** The in-memory policies, not copied (read-only use on the query path). */
  all(): readonly MaskingPolicy[] {
    return this.policies;
  }

  /** Whether any policy masks a column (declassifications alone mask nothing, and derive nothing). */
  masksAny(): boolean {
    return this.policies.some((p) => p.method !== DECLASSIFY);
  }

  get(id: string): MaskingPolicy {
    const p = this.policies.find((x) => x.id === id);
    if (!p) throw notFound('policy_not_found', `No masking policy with id '${id}'`, { id });
    return { ...p, method_config: { ...p.method_config }, exempted_roles: [...p.exempted_roles] };
  }

  /** Validates a full policy (after merging a PUT's changes); 400 names the field. */
  private validate(input: PolicyInput): Omit<MaskingPolicy, 'id' | 'created_at'> {
    for (const field of REQUIRED) {
      const v = input[field];
      if (typeof v !== 'string' || v.trim() === '') throw badRequest('invalid_policy', `'${field}' is required (a non-empty string)`, { field });
    }
    const method = String(input.method);
    const reason = typeof input.reason === 'string' && input.reason.trim() ? input.reason.trim() : null;
    if (method === DECLASSIFY) {
      if (!reason) throw badRequest('declassification_reason_required', "A policy with method 'none' declassifies a column: give the reason", { field: 'reason' });
      if (input.condition_column) throw badRequest('invalid_policy', "A declassification ('none') applies to every row: it takes no condition", { field: 'condition_column' });
      return {
        schema_name: String(input.schema_name),
        table_name: String(input.table_name),
        column_name: String(input.column_name),
        method,
        method_config: {},
        condition_column: null,
        condition_value: null,
        exempted_roles: [],
        reason,
      };
    }
    if (!this.catalog.has(method)) {
      throw badRequest('unknown_masking_method', `Unknown masking method '${method}'; known methods: ${this.catalog.names().join(', ')}`, {
        field: 'method',
        known: this.catalog.names(),
      });
    }
    const method_config = this.catalog.normalizeConfig(method, input.method_config ?? {});
    const roles = input.exempted_roles ?? [...DEFAULT_EXEMPT_ROLES];
    if (!Array.isArray(roles)) throw badRequest('invalid_policy', "'exempted_roles' must be a list of roles", { field: 'exempted_roles' });
    roles.forEach((r, i) => {
      if (!isRole(r)) throw badRequest('invalid_policy', `exempted_roles[${i}] '${String(r)}' is not a role (${ROLES.join(', ')})`, { field: `exempted_roles.${i}` });
    });
    const condition_column = input.condition_column ?? null;
    const condition_value = input.condition_value ?? null;
    if ((condition_column === null) !== (condition_value === null)) {
      const field = condition_column === null ? 'condition_column' : 'condition_value';
      throw badRequest('invalid_policy', `'condition_column' and 'condition_value' go together: '${field}' is missing`, { field });
    }
    if (condition_column !== null && (typeof condition_column !== 'string' || condition_column.trim() === '')) {
      throw badRequest('invalid_policy', "'condition_column' must be a non-empty string", { field: 'condition_column' });
    }
    return {
      schema_name: String(input.schema_name),
      table_name: String(input.table_name),
      column_name: String(input.column_name),
      method,
      method_config,
      condition_column,
      condition_value: condition_value === null ? null : String(condition_value),
      exempted_roles: [...new Set(roles as string[])],
      reason,
    };
  }

  private assertUnique(p: Omit<MaskingPolicy, 'id' | 'created_at'>, ignoreId?: string): void {
    const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
    const clash = this.policies.find(
      (x) => x.id !== ignoreId && same(x.schema_name, p.schema_name) && same(x.table_name, p.table_name) && same(x.column_name, p.column_name),
    );
    if (clash) {
      throw conflict('policy_exists', `Column ${p.schema_name}.${p.table_name}.${p.column_name} already has masking policy '${clash.id}'`, {
        field: 'column_name',
        id: clash.id,
      });
    }
  }

  /**
   * A conditional policy shows which rows have condition_value: its condition column must not be
   * masked itself (by this policy or another on the table), or the row pattern would reveal it.
   */
  private assertConditionVisible(p: Omit<MaskingPolicy, 'id' | 'created_at'>, ignoreId?: string): void {
    const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
    const others = this.policies.filter((x) => x.id !== ignoreId && same(x.schema_name, p.schema_name) && same(x.table_name, p.table_name));
    const refuse = (message: string, column: string) => {
      throw badRequest('masked_condition_column', message, { field: 'condition_column', column });
    };
    if (p.condition_column) {
      if (same(p.condition_column, p.column_name)) refuse(`The condition column '${p.condition_column}' is the masked column itself: which rows are masked would reveal its values`, p.condition_column);
      const masking = others.find((x) => same(x.column_name, p.condition_column as string));
      if (masking) refuse(`The condition column '${p.condition_column}' is masked by policy '${masking.id}': which rows are masked would reveal its values`, p.condition_column);
    }
    const conditioned = others.find((x) => x.condition_column && same(x.condition_column, p.column_name));
    if (conditioned) refuse(`Column '${p.column_name}' is the condition column of policy '${conditioned.id}': masking it would be revealed by which rows that policy masks`, p.column_name);
  }

  /** The reason of a declassification (or any policy given one), kept beside the policy. */
  private async saveReason(id: string, reason: string | null): Promise<void> {
    await this.db().run('DELETE FROM _service.masking_reasons WHERE policy_id = $1', [id]);
    if (reason) await this.db().run('INSERT INTO _service.masking_reasons (policy_id, reason) VALUES ($1, $2)', [id, reason]);
  }

  async create(input: PolicyInput): Promise<MaskingPolicy> {
    const p = this.validate(input);
    this.assertUnique(p);
    this.assertConditionVisible(p);
    const id = crypto.randomUUID();
    await this.db().run(
      `INSERT INTO _service.masking_policies (id, schema_name, table_name, column_name, method, method_config, condition_column, condition_value, exempted_roles)
       VALUES ($1, $2, $3, $4, $5, $6::JSON, $7, $8, $9::JSON)`,
      [id, p.schema_name, p.table_name, p.column_name, p.method, JSON.stringify(p.method_config), p.condition_column, p.condition_value, JSON.stringify(p.exempted_roles)],
    );
    await this.saveReason(id, p.reason ?? null);
    await this.load();
    return this.get(id);
  }

  async update(id: string, changes: PolicyInput): Promise<MaskingPolicy> {
    const current = this.get(id);
    const merged: PolicyInput = { ...current, ...changes };
    // A new method starts from its own defaults unless new settings come with it.
    if (changes.method && changes.method !== current.method && changes.method_config === undefined) merged.method_config = {};
    const p = this.validate(merged);
    this.assertUnique(p, id);
    this.assertConditionVisible(p, id);
    await this.db().run(
      `UPDATE _service.masking_policies SET schema_name = $2, table_name = $3, column_name = $4, method = $5, method_config = $6::JSON,
              condition_column = $7, condition_value = $8, exempted_roles = $9::JSON WHERE id = $1`,
      [id, p.schema_name, p.table_name, p.column_name, p.method, JSON.stringify(p.method_config), p.condition_column, p.condition_value, JSON.stringify(p.exempted_roles)],
    );
    await this.saveReason(id, p.reason ?? null);
    await this.load();
    return this.get(id);
  }

  async remove(id: string): Promise<MaskingPolicy> {
    const p = this.get(id);
    await this.db().run('DELETE FROM _service.masking_policies WHERE id = $1', [id]);
    await this.db().run('DELETE FROM _service.masking_reasons WHERE policy_id = $1', [id]);
    await this.load();
    return p;
  }
}
