/**
 * Masked columns, marked as the server reports them. A query result (`/api/query`, a table's
 * sample) says which of its columns were masked (`masked_columns`); `maskedResultTitle` is the
 * tooltip of one. Lineage views: a column is marked when an explicit policy or one derived
 * through column lineage (`GET /api/masking/policies?derived=true`) masks it, with the same
 * precedence the server applies (docs/security.md "Masking through lineage"): an explicit policy
 * on the very table, then a derived one, then a policy on a namesake column elsewhere; a
 * declassification (`method: none`) lifts it. Which columns are masked is not secret (every role
 * may read the policies); their values are, and the server masks those whatever this shows.
 */
import { useCallback, useEffect, useState } from 'react';
import type { MaskedResultColumn } from '../../../sdk/masking.js';
import { api } from './api';
import { loadMaskingPolicies, type MaskingPolicyView } from './masking';
import { useSession, type Role } from './session';

interface PolicyLike extends MaskingPolicyView {
  reason?: string | null;
  derived?: boolean;
  kind?: 'pass' | 'computed';
  sources?: string[];
}

export interface ColumnMaskMark {
  method: string;
  /** Masked through column lineage from these `schema.table.column` sources. */
  derivedFrom?: string[];
  /** The column is masked because a policy masks a column of the same name elsewhere. */
  byName?: string;
  /** Roles that read raw values. */
  exempt: string[];
  /** Whether the current role reads masked values. */
  forYou: boolean;
  /** The tooltip text. */
  title: string;
}

const lc = (s: string) => s.toLowerCase();

/** One entry of a result's `masked_columns`: the sdk's definition, the one the server fills. */
export type { MaskedResultColumn } from '../../../sdk/masking.js';

/** The tooltip of a masked result column: how, and from which policy's column, the server masked it. */
export function maskedResultTitle(m: MaskedResultColumn): string {
  const how = m.via === 'expression' ? `computed from a column masked with '${m.method}'` : `masked with '${m.method}'`;
  const from = m.source ? ` (${m.derived ? 'derived through lineage from' : 'policy on'} ${m.source})` : '';
  return `${m.name}: ${how}${from}`;
}

/** `masked_columns` as the grid's `maskedAt` (position → tooltip). */
export function maskedAtOf(masked: readonly MaskedResultColumn[] | undefined): ReadonlyMap<number, string> {
  return new Map((masked ?? []).map((m) => [m.index, maskedResultTitle(m)]));
}

/** The mark of `relation.column` (relation as `schema.table`), or null when no policy masks it. */
export function columnMaskMark(explicit: PolicyLike[], derived: PolicyLike[], relation: string, column: string, role: Role): ColumnMaskMark | null {
  const at = (p: PolicyLike) => lc(`${p.schema_name}.${p.table_name}`) === lc(relation) && lc(p.column_name) === lc(column);
  const own = explicit.find(at);
  if (own?.method === 'none') return null;
  const pick = own ?? derived.find(at) ?? explicit.find((p) => p.method !== 'none' && lc(p.column_name) === lc(column));
  if (!pick) return null;
  const exempt = pick.exempted_roles ?? [];
  const forYou = !exempt.includes(role);
  const derivedFrom = pick.derived ? pick.sources ?? [] : undefined;
  const byName = !own && !pick.derived ? `${pick.schema_name}.${pick.table_name}.${pick.column_name}` : undefined;
  const how = derivedFrom
    ? `${pick.kind === 'computed' ? 'computed from' : 'passed through from'} ${derivedFrom.join(', ')} (derived through lineage)`
    : byName
      ? `named like ${byName}, which a policy masks`
      : 'by a policy on this column';
  const who = forYou ? `masked for your role (${role})` : `masked for other roles; ${role} reads raw values`;
  const title = `${column}: ${who} with '${pick.method}', ${how}${exempt.length ? `; exempt: ${exempt.join(', ')}` : ''}`;
  return { method: pick.method, derivedFrom, byName, exempt, forYou, title };
}

/** Explicit and derived policies as state (empty until loaded, or without the masking plugin). */
export function useLineageMasks(): (relation: string, column: string) => ColumnMaskMark | null {
  const session = useSession();
  const enabled = session.plugins.includes('masking');
  const [lists, setLists] = useState<{ explicit: PolicyLike[]; derived: PolicyLike[] }>({ explicit: [], derived: [] });
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    void Promise.all([loadMaskingPolicies(true), api.get<PolicyLike[]>('/api/masking/policies?derived=true').catch(() => [])]).then(([explicit, derived]) => {
      if (live) setLists({ explicit, derived });
    });
    return () => {
      live = false;
    };
  }, [enabled]);
  const role = session.user.role;
  return useCallback((relation: string, column: string) => columnMaskMark(lists.explicit, lists.derived, relation, column, role), [lists, role]);
}
