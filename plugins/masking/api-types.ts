/**
 * The shapes the masking plugin's HTTP API answers with: the one definition the backend stores
 * and returns and the Masking page reads (both `import type` it; types only, so the page's bundle
 * takes nothing from the server side).
 */

/** A masking policy as stored in `_service.masking_policies` and listed by GET /api/masking/policies. */
export interface MaskingPolicy {
  id: string;
  schema_name: string;
  table_name: string;
  column_name: string;
  method: string;
  method_config: Record<string, unknown>;
  condition_column: string | null;
  condition_value: string | null;
  exempted_roles: string[];
  /** Why a column is declassified (`method: none`); null for other methods. */
  reason?: string | null;
  created_at: string;
}
