/**
 * Masking: the policies (add, edit, remove), the method catalog with a form per method's config
 * schema, and a preview of a table's sample as a chosen role sees it.
 */
import { useEffect, useMemo, useState } from 'react';
import { api, Badge, Empty, ErrorBox, Field, FormDialog, loadMaskingPolicies, Loading, maskedAtOf, maskedResultTitle, PageHeader, ResultsGrid, seg, Table, Tabs, useApi, useCan, usePersistentState, useSession, type MaskedResultColumn, type PageProps, type Role } from '@dp/ui';
import type { MaskingPolicy } from '../api-types';

/** A policy derived through column lineage (GET /api/masking/policies?derived=true). */
interface DerivedPolicy {
  id: string;
  schema_name: string;
  table_name: string;
  column_name: string;
  method: string;
  kind: 'pass' | 'computed';
  sources: string[];
  exempted_roles: string[];
}

interface ConfigProperty {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  writeOnly?: boolean;
}

interface Method {
  name: string;
  description: string;
  config_schema: { properties?: Record<string, ConfigProperty>; required?: string[] };
  plugin: string;
}

interface TableEntry {
  schema: string;
  name: string;
}

type TabKey = 'policies' | 'derived' | 'methods' | 'preview';
const ROLES: Role[] = ['viewer', 'editor', 'admin'];

export default function MaskingPage({ page }: PageProps) {
  const [tab, setTab] = usePersistentState<TabKey>('masking.tab', 'policies');
  const methods = useApi((signal) => api.get<Method[]>('/api/masking/methods', { signal }), []);
  const policies = useApi((signal) => api.get<MaskingPolicy[]>('/api/masking/policies', { signal }), []);
  const reload = () => {
    policies.reload();
    // Grids elsewhere mark masked columns from the policies: let them see the change.
    void loadMaskingPolicies(true);
  };
  return (
    <div className="dp-col">
      <PageHeader title={page.title} subtitle="Column masking enforced on every query, for every role without an exemption" />
      <Tabs<TabKey>
        tabs={[
          { key: 'policies', label: 'Policies' },
          { key: 'derived', label: 'Derived through lineage' },
          { key: 'methods', label: 'Methods' },
          { key: 'preview', label: 'Preview as a role' },
        ]}
        active={tab}
        onChange={setTab}
      />
      <ErrorBox error={methods.error ?? policies.error} onRetry={() => (methods.reload(), policies.reload())} />
      {tab === 'policies' ? policies.data && methods.data ? <Policies policies={policies.data} methods={methods.data} onChange={reload} /> : <Loading /> : null}
      {tab === 'derived' ? <Derived /> : null}
      {tab === 'methods' ? methods.data ? <Methods methods={methods.data} /> : <Loading /> : null}
      {tab === 'preview' ? <Preview /> : null}
    </div>
  );
}

/** Model columns masked because their value comes from a masked column (docs/security.md "Masking through lineage"). */
function Derived() {
  const derived = useApi((signal) => api.get<DerivedPolicy[]>('/api/masking/policies?derived=true', { signal }), []);
  if (derived.error) return <ErrorBox error={derived.error} onRetry={derived.reload} />;
  if (!derived.data) return <Loading />;
  return (
    <Table
      rows={derived.data}
      rowKey={(p) => p.id}
      empty="No model column comes from a masked column."
      columns={[
        { key: 'column', header: 'Column', render: (p) => <code>{`${p.schema_name}.${p.table_name}.${p.column_name}`}</code> },
        { key: 'method', header: 'Method', render: (p) => <Badge tone="info">{p.method}</Badge> },
        { key: 'kind', header: 'How', render: (p) => (p.kind === 'pass' ? 'same value as the source' : 'computed from it') },
        { key: 'sources', header: 'Masked source', render: (p) => p.sources.map((s) => <code key={s}>{s} </code>) },
        { key: 'exempt', header: 'Exempt roles', render: (p) => p.exempted_roles.join(', ') || 'none' },
      ]}
    />
  );
}

function Policies({ policies, methods, onChange }: { policies: MaskingPolicy[]; methods: Method[]; onChange: () => void }) {
  const canWrite = useCan('write');
  const [editing, setEditing] = useState<MaskingPolicy | 'new' | null>(null);
  const [error, setError] = useState<unknown>(null);
  const remove = async (p: MaskingPolicy) => {
    if (!window.confirm(`Remove the policy on ${p.schema_name}.${p.table_name}.${p.column_name}?`)) return;
    setError(null);
    try {
      await api.del(`/api/masking/policies/${seg(p.id)}`);
      onChange();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <>
      <div className="dp-row">
        <button type="button" className="dp-btn dp-btn-primary" disabled={!canWrite} onClick={() => setEditing('new')} title={canWrite ? 'Add a masking policy' : 'Needs the editor role'}>
          + Add policy
        </button>
      </div>
      <ErrorBox error={error} />
      <Table
        rows={policies}
        rowKey={(p) => p.id}
        empty="No masking policies yet."
        columns={[
          { key: 'column', header: 'Column', render: (p) => <code>{`${p.schema_name}.${p.table_name}.${p.column_name}`}</code> },
          { key: 'method', header: 'Method', render: (p) => <Badge tone="info">{p.method}</Badge> },
          { key: 'config', header: 'Config', render: (p) => (Object.keys(p.method_config).length ? <code>{JSON.stringify(p.method_config)}</code> : '') },
          { key: 'condition', header: 'Only when', render: (p) => (p.condition_column ? `${p.condition_column} = ${p.condition_value}` : 'always') },
          { key: 'exempt', header: 'Exempt roles', render: (p) => (p.method === 'none' ? '' : p.exempted_roles.join(', ') || 'none') },
          { key: 'reason', header: 'Declassified because', render: (p) => p.reason ?? '' },
          {
            key: 'actions',
            header: '',
            render: (p) =>
              canWrite ? (
                <span className="dp-toolbar">
                  <button type="button" className="dp-btn dp-btn-small" onClick={() => setEditing(p)}>
                    Edit
                  </button>
                  <button type="button" className="dp-btn dp-btn-small dp-btn-danger" onClick={() => void remove(p)}>
                    Remove
                  </button>
                </span>
              ) : null,
          },
        ]}
      />
      <PolicyDialog
        key={editing === null ? 'closed' : editing === 'new' ? 'new' : editing.id}
        policy={editing}
        methods={methods}
        onClose={() => setEditing(null)}
        onSaved={() => {
          setEditing(null);
          onChange();
        }}
      />
    </>
  );
}

/** Form fields for a method's config schema (integers, numbers, booleans, strings, enums). */
function ConfigForm({ method, value, onChange }: { method: Method | undefined; value: Record<string, unknown>; onChange: (v: Record<string, unknown>) => void }) {
  const props = Object.entries(method?.config_schema.properties ?? {});
  if (!method) return null;
  if (props.length === 0) return <div className="dp-muted">{method.name} has no settings.</div>;
  return (
    <>
      {props.map(([key, spec]) => {
        const type = Array.isArray(spec.type) ? spec.type.find((t) => t !== 'null') : spec.type;
        const current = value[key] ?? spec.default ?? '';
        const set = (v: unknown) => onChange({ ...value, [key]: v });
        let control;
        if (spec.enum) {
          control = (
            <select value={String(current)} onChange={(e) => set(e.target.value)} aria-label={key}>
              {spec.enum.map((o) => (
                <option key={String(o)} value={String(o)}>
                  {String(o)}
                </option>
              ))}
            </select>
          );
        } else if (type === 'boolean') {
          control = <input type="checkbox" checked={current === true} onChange={(e) => set(e.target.checked)} aria-label={key} />;
        } else if (type === 'integer' || type === 'number') {
          control = <input type="number" value={String(current)} min={spec.minimum} max={spec.maximum} step={type === 'integer' ? 1 : 'any'} onChange={(e) => set(e.target.value === '' ? undefined : Number(e.target.value))} aria-label={key} />;
        } else {
          control = <input type={spec.writeOnly ? 'password' : 'text'} value={String(current)} onChange={(e) => set(e.target.value)} aria-label={key} />;
        }
        return (
          <Field key={key} label={key} hint={spec.description}>
            {control}
          </Field>
        );
      })}
    </>
  );
}

function PolicyDialog({ policy, methods, onClose, onSaved }: { policy: MaskingPolicy | 'new' | null; methods: Method[]; onClose: () => void; onSaved: () => void }) {
  const existing = policy && policy !== 'new' ? policy : null;
  const tables = useApi((signal) => (policy === 'new' ? api.get<TableEntry[]>('/api/tables', { signal }) : Promise.resolve([] as TableEntry[])), [policy === 'new']);
  const [target, setTarget] = useState(existing ? `${existing.schema_name}.${existing.table_name}` : '');
  const [column, setColumn] = useState(existing?.column_name ?? '');
  const [method, setMethod] = useState(existing?.method ?? 'redact');
  const [config, setConfig] = useState<Record<string, unknown>>(existing?.method_config ?? {});
  const [exempt, setExempt] = useState<string[]>(existing?.exempted_roles ?? ['admin']);
  const [conditionColumn, setConditionColumn] = useState(existing?.condition_column ?? '');
  const [conditionValue, setConditionValue] = useState(existing?.condition_value ?? '');
  const [schema, table] = target.split(/\.(.*)/s);
  const columns = useApi((signal) => (schema && table ? api.get<{ columns: Array<{ name: string }> }>(`/api/tables/${seg(schema)}/${seg(table)}`, { signal }).then((d) => d.columns.map((c) => c.name)) : Promise.resolve([] as string[])), [schema, table]);
  useEffect(() => {
    if (!existing) setConfig({});
  }, [method, existing]);
  const selected = methods.find((m) => m.name === method);
  const save = async () => {
    const body = {
      method,
      method_config: Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined && v !== '')),
      exempted_roles: exempt,
      condition_column: conditionColumn || null,
      condition_value: conditionColumn ? conditionValue : null,
    };
    if (existing) await api.put(`/api/masking/policies/${seg(existing.id)}`, body);
    else await api.post('/api/masking/policies', { ...body, schema_name: schema, table_name: table, column_name: column });
    onSaved();
  };
  return (
    <FormDialog
      open={policy !== null}
      title={existing ? `Edit the policy on ${existing.schema_name}.${existing.table_name}.${existing.column_name}` : 'Add a masking policy'}
      onClose={onClose}
      action="Save policy"
      actionTitle="Save the policy"
      busyTitle="Saving…"
      blocked={!existing && (!schema || !table || !column) ? 'Choose a schema, a table and a column' : null}
      onSubmit={save}
    >
      {existing ? null : (
        <>
          <Field label="Table">
            <TableSelect tables={tables.data ?? []} value={target} onChange={(table) => (setTarget(table), setColumn(''))} label="Table" />
          </Field>
          <Field label="Column">
            <select value={column} onChange={(e) => setColumn(e.target.value)} aria-label="Column" disabled={!columns.data?.length}>
              <option value="">Choose a column…</option>
              {(columns.data ?? []).map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </Field>
        </>
      )}
      <Field label="Method" hint={selected?.description}>
        <select value={method} onChange={(e) => setMethod(e.target.value)} aria-label="Method">
          {methods.map((m) => (
            <option key={m.name} value={m.name}>
              {m.name}
              {m.plugin !== 'masking' ? ` (${m.plugin})` : ''}
            </option>
          ))}
        </select>
      </Field>
      <ConfigForm method={selected} value={config} onChange={setConfig} />
      <fieldset className="dp-fieldset">
        <legend>Exempt roles (see real values)</legend>
        {ROLES.map((r) => (
          <label key={r} className="dp-row">
            <input type="checkbox" checked={exempt.includes(r)} onChange={(e) => setExempt((x) => (e.target.checked ? [...x, r] : x.filter((y) => y !== r)))} /> {r}
          </label>
        ))}
      </fieldset>
      <Field label="Only when column (optional)" hint="Mask only rows where this column equals the value">
        <input value={conditionColumn} onChange={(e) => setConditionColumn(e.target.value)} aria-label="Condition column" />
      </Field>
      {conditionColumn ? (
        <Field label="equals">
          <input value={conditionValue} onChange={(e) => setConditionValue(e.target.value)} aria-label="Condition value" />
        </Field>
      ) : null}
    </FormDialog>
  );
}

function Methods({ methods }: { methods: Method[] }) {
  const [chosen, setChosen] = useState<string>(methods[0]?.name ?? '');
  const [config, setConfig] = useState<Record<string, unknown>>({});
  const method = methods.find((m) => m.name === chosen);
  return (
    <div className="dp-split">
      <div className="dp-grow">
        <Table
          rows={methods}
          rowKey={(m) => m.name}
          onRowClick={(m) => (setChosen(m.name), setConfig({}))}
          columns={[
            { key: 'name', header: 'Method', render: (m) => <strong>{m.name}</strong> },
            { key: 'description', header: 'What it does' },
            { key: 'settings', header: 'Settings', render: (m) => Object.keys(m.config_schema.properties ?? {}).join(', ') || 'none' },
            { key: 'plugin', header: 'From' },
          ]}
        />
      </div>
      {method ? (
        <div className="dp-card" style={{ width: 340, flex: 'none' }}>
          <strong>{method.name}</strong>
          <p className="dp-muted">{method.description}</p>
          <ConfigForm method={method} value={config} onChange={setConfig} />
          <div className="dp-muted" style={{ marginTop: '0.5rem' }}>
            As method_config: <code>{JSON.stringify(Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined && v !== '')))}</code>
          </div>
        </div>
      ) : null}
    </div>
  );
}

function Preview() {
  const session = useSession();
  const tables = useApi((signal) => api.get<TableEntry[]>('/api/tables', { signal }), []);
  const allowed = useMemo(() => ROLES.slice(0, ROLES.indexOf(session.user.role) + 1), [session.user.role]);
  const [target, setTarget] = usePersistentState('masking.preview.table', '');
  const [role, setRole] = useState<Role>('viewer');
  // What the server masked for that role (explicit, derived and namesake policies alike): its
  // `masked_columns`, never a guess from the explicit policies of this one table.
  const [result, setResult] = useState<{ role: Role; columns: string[]; column_types: string[]; rows: unknown[][]; notes?: string[]; masked_columns: MaskedResultColumn[] } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [schema, table] = target.split(/\.(.*)/s);
  const run = async () => {
    setError(null);
    try {
      setResult(await api.post('/api/masking/preview', { schema_name: schema, table_name: table, role, limit: 50 }));
    } catch (e) {
      setResult(null);
      setError(e);
    }
  };
  return (
    <>
      <div className="dp-row">
        <TableSelect tables={tables.data ?? []} value={target} onChange={setTarget} label="Table to preview" />
        <label className="dp-row">
          as
          <select value={role} onChange={(e) => setRole(e.target.value as Role)} aria-label="Role to preview as">
            {allowed.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="dp-btn dp-btn-primary" title={!schema || !table ? 'Choose a table first' : 'Show the sample as the chosen role sees it'} disabled={!schema || !table} onClick={() => void run()}>
          Preview
        </button>
      </div>
      <ErrorBox error={error} />
      {result ? (
        <>
          <div className="dp-row">
            {result.masked_columns.length ? (
              <Badge tone="info">
                masked for {result.role}: {result.masked_columns.map((m) => m.name).join(', ')}
              </Badge>
            ) : (
              <Badge>nothing masked for {result.role}</Badge>
            )}
            {(result.notes ?? []).map((n) => (
              <Badge key={n} tone="warn">
                {n}
              </Badge>
            ))}
          </div>
          <div style={{ height: 420, display: 'flex' }}>
            <ResultsGrid columns={result.columns} columnTypes={result.column_types} rows={result.rows} maskedAt={maskedAtOf(result.masked_columns)} />
          </div>
          {result.masked_columns.length ? (
            <Table
              rows={result.masked_columns}
              rowKey={(m) => String(m.index)}
              columns={[
                { key: 'name', header: 'Column' },
                { key: 'method', header: 'Method' },
                { key: 'source', header: 'From', render: (m) => (m.source ? `${m.derived ? 'derived through lineage from ' : 'policy on '}${m.source}` : 'policy on this column') },
                { key: 'how', header: 'How', render: (m) => maskedResultTitle(m) },
              ]}
            />
          ) : null}
        </>
      ) : (
        <Empty>Pick a table and a role to see its sample as that role sees it.</Empty>
      )}
    </>
  );
}

/** A select of the tables by `schema.name`, empty until one is chosen. */
function TableSelect({ tables, value, onChange, label }: { tables: TableEntry[]; value: string; onChange: (table: string) => void; label: string }) {
  return (
    <select value={value} onChange={(e) => onChange(e.target.value)} aria-label={label}>
      <option value="">Choose a table…</option>
      {tables.map((t) => (
        <option key={`${t.schema}.${t.name}`} value={`${t.schema}.${t.name}`}>
          {t.schema}.{t.name}
        </option>
      ))}
    </select>
  );
}
