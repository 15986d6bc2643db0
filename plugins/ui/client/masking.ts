/**
 * The masking policies (GET /api/masking/policies, readable by every role), for pages that show
 * them. Which columns of a result are masked comes from the result itself (`masked_columns`,
 * masked-columns.ts), never guessed from these.
 */
import { useEffect, useState } from 'react';
import { api } from './api';
import { useSession } from './session';

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
