/** HTTP endpoints of the masking plugin (docs/decisions.md "Masking policy", endpoints). */
import { type Caller, forbidden, hasPermission, type JsonSchema, type PluginContext } from '../../sdk/index.js';
import { shownPolicy, type MethodCatalog } from './catalog.js';
import type { DerivedPolicy } from './derived.js';
import { DECLASSIFY, type MaskingPolicy, type PolicyInput, policyProperties, type PolicyStore } from './policies.js';

/** Declassifying a column lifts masking for every role: admins only (issue 19). */
export function assertMayDeclassify(caller: Caller, method: unknown): void {
  if (method === DECLASSIFY && caller.role !== 'admin') {
    throw forbidden('declassification_admin_only', "Only an admin may declassify a column (method 'none')", { field: 'method', role: caller.role });
  }
}

const derivedSchema: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    schema_name: { type: 'string' },
    table_name: { type: 'string' },
    column_name: { type: 'string' },
    method: { type: 'string' },
    method_config: { type: 'object', additionalProperties: true },
    exempted_roles: { type: 'array', items: { type: 'string' } },
    derived: { type: 'boolean' },
    kind: { type: 'string', enum: ['pass', 'computed'], description: 'pass: same value as the source (same method); computed: redact or null by type' },
    sources: { type: 'array', items: { type: 'string' }, description: 'schema.table.column of the explicit policies the value comes from' },
  },
};

const policySchema: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    ...policyProperties,
    method_config: { type: 'object', additionalProperties: true, description: 'Method settings with defaults filled in' },
    created_at: { type: 'string', description: 'YYYY-MM-DD HH:MM:SS' },
  },
};

/** A derived policy as listed: its settings shown like the explicit policy it comes from. */
function presentDerived(policy: DerivedPolicy, caller: Caller, catalog: MethodCatalog): DerivedPolicy {
  return { ...(present(policy, caller, catalog) as DerivedPolicy) };
}

const idParams: JsonSchema = {
  type: 'object',
  required: ['policy_id'],
  properties: { policy_id: { type: 'string', minLength: 1 } },
};

/** A policy as the caller may read it (the one rule: catalog.ts `shownPolicy`). */
function present(policy: MaskingPolicy, caller: Caller, catalog: MethodCatalog): MaskingPolicy {
  return shownPolicy(policy, caller, catalog);
}

export function registerRoutes(ctx: PluginContext, store: PolicyStore, catalog: MethodCatalog, derived: () => Promise<readonly DerivedPolicy[]>): void {
  ctx.route({
    method: 'GET',
    url: '/api/masking/methods',
    permission: 'read',
    summary: 'The live catalog of masking methods, each with the JSON schema of its config',
    tags: ['masking'],
    handler: () => catalog.list(),
  });

  ctx.route<unknown, { derived?: boolean }>({
    method: 'GET',
    url: '/api/masking/policies',
    permission: 'read',
    summary: 'All masking policies; with derived=true the policies derived through column lineage (each with its sources and method)',
    tags: ['masking'],
    schema: {
      querystring: { type: 'object', additionalProperties: false, properties: { derived: { type: 'boolean', description: 'List the policies derived through column lineage instead' } } },
      response: { 200: { type: 'array', items: { type: 'object', properties: { ...(policySchema.properties as object), ...(derivedSchema.properties as object) } } } },
    },
    handler: async (req) => {
      if (req.query.derived) return (await derived()).map((p) => presentDerived(p, req.caller, catalog));
      await store.ensureLoaded();
      return store.list().map((p) => present(p, req.caller, catalog));
    },
  });

  ctx.route<PolicyInput>({
    method: 'POST',
    url: '/api/masking/policies',
    permission: 'write',
    summary: 'Create a masking policy (method and method_config are validated; 400 names the field)',
    tags: ['masking'],
    schema: {
      body: { type: 'object', required: ['schema_name', 'table_name', 'column_name', 'method'], additionalProperties: false, properties: policyProperties },
      response: { 201: policySchema },
    },
    handler: async (req, reply) => {
      assertMayDeclassify(req.caller, req.body.method);
      const policy = await store.create(req.body);
      reply.code(201);
      return policy;
    },
  });

  ctx.route<unknown, unknown, { policy_id: string }>({
    method: 'GET',
    url: '/api/masking/policies/:policy_id',
    permission: 'read',
    summary: 'One masking policy',
    tags: ['masking'],
    schema: { params: idParams, response: { 200: policySchema } },
    handler: (req) => present(store.get(req.params.policy_id), req.caller, catalog),
  });

  ctx.route<PolicyInput, unknown, { policy_id: string }>({
    method: 'PUT',
    url: '/api/masking/policies/:policy_id',
    permission: 'write',
    summary: 'Change properties of a masking policy',
    tags: ['masking'],
    schema: {
      params: idParams,
      body: { type: 'object', minProperties: 1, additionalProperties: false, properties: policyProperties },
      response: { 200: policySchema },
    },
    handler: (req) => {
      assertMayDeclassify(req.caller, req.body.method ?? store.get(req.params.policy_id).method);
      return store.update(req.params.policy_id, req.body);
    },
  });

  ctx.route<unknown, unknown, { policy_id: string }>({
    method: 'DELETE',
    url: '/api/masking/policies/:policy_id',
    permission: 'write',
    summary: 'Delete a masking policy',
    tags: ['masking'],
    schema: { params: idParams },
    handler: async (req) => ({ deleted: true, policy: await store.remove(req.params.policy_id) }),
  });
}
