/**
 * `POST /api/masking/preview`: sample rows of a table as another role would see them, so whoever
 * writes a policy can check its effect before a viewer meets it. The rows come from the guarded
 * runner with that role (the same rewrite, checks and limits as the role's own queries). A caller
 * may preview only roles at or below its own: a viewer never sees what an editor sees. The answer's
 * `masked_columns` say which columns the role reads masked and how (explicit and derived policies
 * alike), as `POST /api/query` says it.
 */
import { forbidden, type JsonSchema, type PluginContext, qualified, ROLES, type Role } from '../../sdk/index.js';

const bodySchema: JsonSchema = {
  type: 'object',
  required: ['schema_name', 'table_name', 'role'],
  additionalProperties: false,
  properties: {
    schema_name: { type: 'string', minLength: 1 },
    table_name: { type: 'string', minLength: 1 },
    role: { enum: [...ROLES] },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 20 },
  },
};

interface PreviewBody {
  schema_name: string;
  table_name: string;
  role: Role;
  limit?: number;
}

export function registerPreviewRoute(ctx: PluginContext): void {
  ctx.route<PreviewBody>({
    method: 'POST',
    url: '/api/masking/preview',
    permission: 'read',
    summary: 'Sample rows of a table masked as a given role sees them (that role or one below the caller’s)',
    tags: ['masking'],
    schema: { body: bodySchema },
    handler: async (req) => {
      const { schema_name: schema, table_name: table, role } = req.body;
      if (ROLES.indexOf(role) > ROLES.indexOf(req.caller.role)) {
        throw forbidden('preview_role_above_caller', `Role '${req.caller.role}' cannot preview what role '${role}' sees`, { role, caller_role: req.caller.role });
      }
      const result = await ctx.queries.run({
        sql: `SELECT * FROM ${qualified(schema, table)}`,
        limit: req.body.limit ?? 20,
        // Authenticated: without --auth the caller is an exempt local admin, and the preview must
        // show the role's masking regardless (it only ever narrows what the caller sees).
        caller: { ...req.caller, role, authenticated: true },
        purpose: 'sample',
        table: { schema, table },
      });
      return { schema_name: schema, table_name: table, role, columns: result.columns, column_types: result.column_types, rows: result.rows, masked_columns: result.masked_columns ?? [], ...(result.notes?.length ? { notes: result.notes } : {}) };
    },
  });
}
