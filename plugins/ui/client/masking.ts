/**
 * Which columns of a result are masked for the current role, from the masking policies
 * (GET /api/masking/policies, readable by every role), to mark them in grids. Marking only:
 * the server masks the values whatever the UI shows.
 */
import { useEffect, useState } from 'react';
import { api } from './api';
import { useSession, type Role } from './session';

export interface MaskingPolicyView {
  id: string;
  schema_name: string;
  table_name: string;
  column_name: string;
  method: string;
  exempted_roles: string[];
}

let policies: Promise<MaskingPolicyView[]> | null = null;

/** The policies (fetched once; `refresh` after a change). An absent masking plugin means none. */
export function loadMaskingPolicies(refresh = false): Promise<MaskingPolicyView[]> {
  if (!policies || refresh) policies = api.get<MaskingPolicyView[]>('/api/masking/policies').catch(() => []);
  return policies;
}

const words = (sql: string) => new Set(sql.toLowerCase().match(/[a-z_][a-z0-9_$]*/g) ?? []);

/**
 * Result columns masked for `role`: those named like a policy's column on a table the SQL names
 * (or on `table` when given, for a table's sample), unless the role is exempt.
 */
export function maskedColumns(all: MaskingPolicyView[], role: Role, columns: string[], source: { sql: string } | { schema: string; table: string }): string[] {
  const applies = all.filter((p) => !p.exempted_roles.includes(role));
  const relevant =
    'sql' in source
      ? (() => {
          const w = words(source.sql);
          return applies.filter((p) => w.has(p.table_name.toLowerCase()));
        })()
      : applies.filter((p) => p.schema_name.toLowerCase() === source.schema.toLowerCase() && p.table_name.toLowerCase() === source.table.toLowerCase());
  const names = new Set(relevant.map((p) => p.column_name.toLowerCase()));
  return columns.filter((c) => names.has(c.toLowerCase()));
}

/** The masking policies as state (empty until loaded). */
export function useMaskingPolicies(): MaskingPolicyView[] {
  const [list, setList] = useState<MaskingPolicyView[]>([]);
  const enabled = useSession().plugins.includes('masking');
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    void loadMaskingPolicies().then((p) => live && setList(p));
    return () => {
      live = false;
    };
  }, [enabled]);
  return list;
}
