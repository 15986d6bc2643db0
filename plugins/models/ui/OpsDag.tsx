/**
 * The DAG as an operations view: opens fitted with a minimap; each node coloured by its last
 * build and freshness (failed, stale, fresh, never built) with the time of that build, live while
 * a transform runs ("unchanged" is a success, never a warning); a search that takes dbt's
 * selection syntax (`+model`, `model+`, `+model+`, `schema.*`, several terms) and "build
 * selected".
 */
import { useEffect, useMemo, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { api, Badge, Empty, ErrorBox, Loading, seg, useApi, useCan, useSession } from '@dp/ui';
import { Graph, type GraphEdge, type GraphNode } from '@dp/ui/graph';

export interface DagData {
  /** `built` and `rows`: what the environment's target holds for the model (rows of a table, the engine's estimate). */
  nodes: Array<{ id: string; type: string; label: string; schema?: string; name?: string; path?: string; materialized?: string; built?: boolean; rows?: number | null }>;
  edges: Array<{ source: string; target: string }>;
}

interface Freshness {
  model: string;
  last_built_at: string | null;
  last_status: string | null;
  hours_since_build: number | null;
  status: 'fresh' | 'stale' | 'never_built';
}

interface BuildState {
  model: string;
  status: 'up_to_date' | 'new' | 'changed' | 'stale';
}

interface TransformResult {
  run_id: string;
  status: string;
  duration_ms: number;
  results: Array<{ model: string; status: string; duration_ms: number; error?: string }>;
}

/** A run's outcome in words: "2 built, 1 unchanged, 1 failed" (skipped means unchanged). */
export function runSummary(results: TransformResult['results']): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    const word = r.status === 'skipped' ? 'unchanged' : r.status.replace('_', ' ');
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts].map(([w, n]) => `${n} ${w}`).join(', ') || 'nothing to build';
}

export type LiveModels = Record<string, { status: string; error?: string; duration_ms?: number }>;

/** What a node shows: one of these words, in `data-status` and the legend. */
export type NodeState = 'failed' | 'stale' | 'fresh' | 'never' | 'running' | 'other';

const FAILED = new Set(['error', 'assertion_failed', 'upstream_failed', 'failed']);

/** "3 min ago", "5 h ago", "2 d ago" from an ISO time. */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/**
 * A node's state: a run in this session wins (running, failed, built; `skipped` means unchanged,
 * so the stored state stands), then the last stored build (failed), then the code changed since
 * that build (stale), then its age (stale past the freshness limit), fresh, or never built.
 */
export function nodeState(live: { status: string } | undefined, fresh: Freshness | undefined, build: BuildState | undefined): { state: NodeState; why: string } {
  if (live?.status === 'running') return { state: 'running', why: 'building now' };
  if (live && FAILED.has(live.status)) return { state: 'failed', why: `last run: ${live.status.replace('_', ' ')}` };
  if (live?.status === 'built') return { state: 'fresh', why: 'built in the last run' };
  if (fresh?.last_status && FAILED.has(fresh.last_status)) return { state: 'failed', why: `last build: ${fresh.last_status.replace('_', ' ')}` };
  if (build && build.status !== 'up_to_date') return { state: 'stale', why: build.status === 'changed' ? 'its SQL changed since the last build' : build.status === 'new' ? 'not built yet' : 'something upstream changed since' };
  if (fresh?.status === 'stale') return { state: 'stale', why: `built ${fresh.hours_since_build} h ago, past the freshness limit` };
  if (fresh?.status === 'fresh') return { state: 'fresh', why: live?.status === 'skipped' ? 'unchanged in the last run' : 'fresh' };
  if (fresh?.status === 'never_built') return { state: 'never', why: 'never built' };
  // A target other than the DuckDB file keeps no freshness here: its recorded build is what there is.
  if (build?.status === 'up_to_date') return { state: 'fresh', why: 'built from its current SQL and upstreams' };
  return { state: 'other', why: '' };
}

/** A glob (`*` any text) as a whole-string, case-insensitive test. */
function globTest(glob: string): (s: string) => boolean {
  const re = new RegExp(`^${glob.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 'i');
  return (s) => re.test(s);
}

/**
 * The nodes a dbt-style selection names: space- or comma-separated terms, each a model
 * (`schema.name` or `name`), a glob (`marts.*`, `stg_*`), with `+` before for its ancestors and
 * after for its descendants. A term naming nothing exactly matches by substring (a search).
 */
export function selectNodes(expression: string, nodes: Array<{ id: string; label: string }>, edges: Array<{ source: string; target: string }>): Set<string> {
  const parents = new Map<string, string[]>();
  const children = new Map<string, string[]>();
  for (const e of edges) {
    (parents.get(e.target) ?? parents.set(e.target, []).get(e.target)!).push(e.source);
    (children.get(e.source) ?? children.set(e.source, []).get(e.source)!).push(e.target);
  }
  const walk = (start: string, next: Map<string, string[]>, into: Set<string>) => {
    const stack = [start];
    while (stack.length) for (const n of next.get(stack.pop()!) ?? []) if (!into.has(n)) (into.add(n), stack.push(n));
  };
  const out = new Set<string>();
  for (const raw of expression.split(/[\s,]+/).filter(Boolean)) {
    const up = raw.startsWith('+');
    const down = raw.endsWith('+') && raw.length > 1;
    const core = raw.replace(/^\+/, '').replace(/\+$/, '');
    if (!core) continue;
    const test = core.includes('*') ? globTest(core) : (s: string) => s.toLowerCase() === core.toLowerCase();
    let hits = nodes.filter((n) => test(n.id) || test(n.label)).map((n) => n.id);
    if (hits.length === 0 && !core.includes('*')) hits = nodes.filter((n) => n.id.toLowerCase().includes(core.toLowerCase())).map((n) => n.id);
    for (const id of hits) {
      out.add(id);
      if (up) walk(id, parents, out);
      if (down) walk(id, children, out);
    }
  }
  return out;
}

export function OpsDag({ base, live, full }: { base: string; live: { runId: string | null; running: boolean; models: LiveModels }; full: boolean }) {
  const navigate = useNavigate();
  const session = useSession();
  const canBuild = useCan('execute');
  const quality = session.plugins.includes('quality');
  const dag = useApi((signal) => api.get<DagData>(full ? '/api/dag/full' : '/api/dag', { signal }), [full]);
  // Reloaded when a run ends, so colours and build times follow it.
  const freshness = useApi((signal) => (quality ? api.get<{ models: Freshness[] }>('/api/freshness', { signal }) : Promise.resolve({ models: [] as Freshness[] })), [quality, live.running]);
  const buildState = useApi((signal) => api.get<{ models: BuildState[] }>('/api/models/status', { signal }), [live.running]);
  const [expression, setExpression] = useState('');
  const [building, setBuilding] = useState(false);
  const [buildError, setBuildError] = useState<unknown>(null);
  const [lastRun, setLastRun] = useState<TransformResult | null>(null);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30_000);
    return () => clearInterval(timer);
  }, []);

  const models = useMemo(() => new Set((dag.data?.nodes ?? []).filter((n) => n.type === 'table' || n.type === 'view').map((n) => n.id)), [dag.data]);
  const selected = useMemo(() => (expression.trim() && dag.data ? selectNodes(expression, dag.data.nodes, dag.data.edges) : null), [expression, dag.data]);
  const selectedModels = useMemo(() => [...(selected ?? [])].filter((id) => models.has(id)), [selected, models]);
  const freshBy = useMemo(() => new Map((freshness.data?.models ?? []).map((f) => [f.model, f])), [freshness.data]);
  const buildBy = useMemo(() => new Map((buildState.data?.models ?? []).map((b) => [b.model, b])), [buildState.data]);

  const nodes: GraphNode[] = useMemo(
    () =>
      (dag.data?.nodes ?? []).map((n) => {
        const isModel = models.has(n.id);
        const f = freshBy.get(n.id);
        const { state, why } = isModel ? nodeState(live.models[n.id], f, buildBy.get(n.id)) : { state: 'other' as NodeState, why: '' };
        const when = f?.last_built_at ? ago(f.last_built_at, now) : null;
        const rows = typeof n.rows === 'number' ? `${n.rows.toLocaleString()} rows` : null;
        const sub = isModel ? [state === 'running' ? 'building…' : state === 'never' ? 'never built' : when ? `built ${when}` : n.type, rows, state === 'stale' || state === 'failed' ? state : null].filter(Boolean).join(' · ') : n.type;
        const kindOf = state === 'other' ? (n.type === 'seed' ? 'seed' : n.type === 'source' || n.type === 'ingest' ? 'source' : 'default') : state;
        return {
          id: n.id,
          label: full ? n.id : n.label,
          sublabel: sub,
          kind: kindOf,
          status: isModel ? state : undefined,
          title: isModel ? `${n.id}: ${why}${f?.last_built_at ? ` (last build ${new Date(f.last_built_at).toLocaleString()})` : ''}${live.models[n.id]?.error ? `\n${live.models[n.id]!.error}` : ''}` : `${n.id} (${n.type})`,
          highlighted: !!selected?.has(n.id),
          dimmed: !!selected && !selected.has(n.id),
        };
      }),
    [dag.data, models, freshBy, buildBy, live, full, selected, now],
  );
  const edges: GraphEdge[] = useMemo(() => (dag.data?.edges ?? []).map((e) => ({ from: e.source, to: e.target })), [dag.data]);
  const counts = useMemo(() => {
    const c: Record<string, number> = {};
    for (const n of nodes) if (n.status) c[n.status] = (c[n.status] ?? 0) + 1;
    return c;
  }, [nodes]);

  const buildSelected = async () => {
    setBuilding(true);
    setBuildError(null);
    setLastRun(null);
    try {
      setLastRun(await api.post<TransformResult>('/api/transform', { targets: selectedModels }));
      freshness.reload();
      buildState.reload();
    } catch (e) {
      setBuildError(e);
    } finally {
      setBuilding(false);
    }
  };

  if (dag.error) return <ErrorBox error={dag.error} onRetry={dag.reload} />;
  if (!dag.data) return <Loading />;
  if (nodes.length === 0) return <Empty>No models yet: add one with “New model”.</Empty>;
  const buildBlocked = !canBuild ? 'Building needs the execute permission (editor or admin role)' : live.running || building ? 'A transform is running' : selectedModels.length === 0 ? 'Select models first (for example +marts.orders or staging.*)' : null;
  return (
    <>
      <div className="dp-row">
        <input
          type="search"
          className="dp-grow"
          style={{ maxWidth: 460 }}
          value={expression}
          onChange={(e) => setExpression(e.target.value)}
          placeholder="Search or select: +model, model+, schema.*"
          aria-label="Select models"
          title="dbt selection: name or schema.name, + before for upstream, + after for downstream, * as a wildcard; several terms separated by spaces"
        />
        {selected ? (
          <span className="dp-muted" data-testid="dag-selection">
            {selectedModels.length} model{selectedModels.length === 1 ? '' : 's'} selected
          </span>
        ) : null}
        <button type="button" className="dp-btn dp-btn-primary" disabled={!!buildBlocked} title={buildBlocked ?? `Build ${selectedModels.join(', ')}`} onClick={() => void buildSelected()}>
          {building ? 'Starting…' : `Build selected${selectedModels.length ? ` (${selectedModels.length})` : ''}`}
        </button>
        <ul className="dp-legend" aria-label="Node colours" style={{ marginLeft: 'auto' }}>
          {(['fresh', 'stale', 'failed', 'never'] as const).map((s) => (
            <li key={s}>
              <span className={`dp-legend-swatch dp-legend-${s}`} aria-hidden="true" />
              {s === 'never' ? 'never built' : s} {counts[s] ? <Badge tone={s === 'failed' ? 'bad' : s === 'stale' ? 'warn' : s === 'fresh' ? 'ok' : 'neutral'}>{counts[s]}</Badge> : null}
            </li>
          ))}
        </ul>
      </div>
      {lastRun ? (
        <div className="dp-row" role="status" data-testid="dag-run-result">
          <Badge tone={lastRun.status === 'success' ? 'ok' : 'bad'}>{lastRun.status === 'success' ? 'run succeeded' : 'run failed'}</Badge>
          <span>{runSummary(lastRun.results)}</span>
          <span className="dp-muted">in {lastRun.duration_ms} ms</span>
          {lastRun.results
            .filter((r) => r.error)
            .map((r) => (
              <span key={r.model} className="dp-muted" title={r.error}>
                {r.model}: {r.error!.length > 120 ? r.error!.slice(0, 119) + '…' : r.error}
              </span>
            ))}
        </div>
      ) : null}
      <ErrorBox error={buildError ?? freshness.error ?? buildState.error} />
      <Graph
        nodes={nodes}
        edges={edges}
        minimap
        height="calc(100vh - 270px)"
        ariaLabel={full ? 'Full DAG' : 'Model DAG'}
        onNodeClick={(n) => {
          if (models.has(n.id)) navigate(`${base}/m/${seg(n.id)}`);
          else if (/^[^/]+\.[^/]+$/.test(n.id)) navigate(`/explorer/${n.id.split('.').map(seg).join('/')}`);
        }}
      />
    </>
  );
}
