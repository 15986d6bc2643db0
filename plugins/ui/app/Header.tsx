/** The header: project, environment (an admin can switch it), plugins, health, and the user with their role. */
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { api, Badge, Dialog, ErrorBox, seg, useApi, useCan, useSession } from '@dp/ui';

interface Health {
  status: string;
  project?: string;
  environment?: string | null;
  error?: string;
}

interface Environment {
  active: string | null;
  available: string[];
}

interface Plugins {
  enabled: Array<{ name: string; version: string; description: string }>;
  disabled: string[];
}

const HEALTH_EVERY_MS = 30_000;

export function Header({ health, onHealth }: { health: Health | null; onHealth: (h: Health) => void }) {
  const session = useSession();
  const canSwitch = useCan('manage_environment');
  const env = useApi((signal) => api.get<Environment>('/api/environment', { signal }), []);
  const [switchError, setSwitchError] = useState<unknown>(null);
  const [switching, setSwitching] = useState(false);
  // The environment picked in the menu, waiting for the admin to confirm (it applies to everyone).
  const [confirmEnv, setConfirmEnv] = useState<string | null>(null);

  // Health: polled, so a stopped server or a broken database shows in the header.
  useEffect(() => {
    const timer = setInterval(() => {
      api
        .get<Health>('/api/health')
        .then(onHealth)
        .catch((e: Error) => onHealth({ status: 'unreachable', error: e.message }));
    }, HEALTH_EVERY_MS);
    return () => clearInterval(timer);
  }, [onHealth]);

  const switchTo = async (name: string) => {
    setSwitching(true);
    setSwitchError(null);
    try {
      await api.put(`/api/environment/${seg(name)}`);
      env.reload();
      session.refresh();
    } catch (e) {
      setSwitchError(e);
    } finally {
      setSwitching(false);
    }
  };

  const ok = health?.status === 'ok';
  return (
    <>
    <header className="dp-header">
      <div className="dp-brand">
        <span className="dp-logo" aria-hidden="true">
          dp
        </span>
        <span className="dp-project" data-testid="project-name">
          {health?.project ?? session.project.name}
        </span>
      </div>
      <div className="dp-header-env">
        <label className="dp-muted" htmlFor="dp-env">
          Environment
        </label>
        {env.data && env.data.available.length > 0 ? (
          <select id="dp-env" value={env.data.active ?? ''} disabled={!canSwitch || switching} onChange={(e) => setConfirmEnv(e.target.value)} title={switching ? 'Switching…' : canSwitch ? 'Switch the environment (reopens the database, for every user)' : 'Only an admin can switch the environment'}>
            {env.data.active === null ? <option value="">(default)</option> : null}
            {env.data.available.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        ) : env.data ? (
          <span id="dp-env">{env.data.active ?? 'default'}</span>
        ) : (
          <span className="dp-muted">…</span>
        )}
        {switchError ? <ErrorBox error={switchError} /> : null}
        <Dialog
          open={confirmEnv !== null}
          title={`Switch to the ${confirmEnv} environment?`}
          onClose={() => setConfirmEnv(null)}
          footer={
            <>
              <button type="button" className="dp-btn" onClick={() => setConfirmEnv(null)}>
                Cancel
              </button>
              <button
                type="button"
                className="dp-btn dp-btn-primary"
                onClick={() => {
                  const name = confirmEnv!;
                  setConfirmEnv(null);
                  void switchTo(name);
                }}
              >
                Switch for everyone
              </button>
            </>
          }
        >
          <p>
            This applies to <strong>every user of this server</strong>, not only to you: the server reopens the database of <code>{confirmEnv}</code>, and queries, transforms
            and schedules run there until an admin switches back. Queries running now may fail.
          </p>
        </Dialog>
      </div>
      <div className="dp-header-right">
        <GitStatus />
        <PluginsMenu />
        <span className={`dp-health ${ok ? 'dp-health-ok' : 'dp-health-bad'}`} title={ok ? 'Server and database answer' : (health?.error ?? 'Not healthy')} data-testid="health">
          <span className="dp-dot" aria-hidden="true" /> {ok ? 'healthy' : (health?.status ?? '…')}
        </span>
        <UserMenu />
      </div>
    </header>
    {env.data?.active ? (
      <div className={`dp-env-banner${/prod/i.test(env.data.active) ? ' dp-env-banner-prod' : ''}`} role="status" data-testid="environment-banner">
        Environment <strong>{env.data.active}</strong> is active for every user of this server.
      </div>
    ) : null}
    </>
  );
}

/** A popover that closes on Escape and on a click elsewhere. */
function Popover({ label, children, testId }: { label: ReactNode; children: ReactNode; testId?: string }) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent | KeyboardEvent) => {
      if (e instanceof KeyboardEvent ? e.key === 'Escape' : !ref.current?.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener('mousedown', close);
    window.addEventListener('keydown', close);
    return () => {
      window.removeEventListener('mousedown', close);
      window.removeEventListener('keydown', close);
    };
  }, [open]);
  return (
    <div className="dp-popover" ref={ref}>
      <button type="button" className="dp-btn dp-btn-ghost" aria-expanded={open} aria-haspopup="true" onClick={() => setOpen((o) => !o)} data-testid={testId}>
        {label}
      </button>
      {open ? <div className="dp-popover-panel">{children}</div> : null}
    </div>
  );
}

interface GitStatusAnswer {
  is_repo: boolean;
  branch?: string | null;
  dirty?: boolean;
  changed_files?: Array<{ path: string; status: string }>;
  last_commit?: { hash: string; message: string; author: string; date: string } | null;
}

const GIT_EVERY_MS = 60_000;

/**
 * The project's git branch and changed files (the catalog plugin's GET /api/git/status). Shows
 * nothing outside a repository or when the catalog plugin is disabled (404).
 */
function GitStatus() {
  const git = useApi<GitStatusAnswer>(
    (signal) => api.get<GitStatusAnswer>('/api/git/status', { signal }).catch((e: { status?: number }): GitStatusAnswer | Promise<never> => (e.status === 404 ? { is_repo: false } : Promise.reject(e))),
    [],
  );
  useEffect(() => {
    const timer = setInterval(() => git.reload(), GIT_EVERY_MS);
    return () => clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  const g = git.data;
  if (!g?.is_repo) return null;
  const changed = g.changed_files ?? [];
  return (
    <div data-testid="git-status">
      <Popover
        label={
          <span title={g.dirty ? `${changed.length} changed file(s)` : 'No uncommitted changes'}>
            <span aria-hidden="true">⎇</span> {g.branch ?? 'detached'} {g.dirty ? <Badge tone="warn">{changed.length} changed</Badge> : <Badge tone="ok">clean</Badge>}
          </span>
        }
        testId="git-menu"
      >
        <div className="dp-col" style={{ gap: 6, minWidth: 260 }}>
          {g.last_commit ? (
            <div>
              <div className="dp-muted" style={{ fontSize: 12 }}>
                Last commit {g.last_commit.hash.slice(0, 8)} by {g.last_commit.author}
              </div>
              <div>{g.last_commit.message}</div>
            </div>
          ) : (
            <div className="dp-muted">No commits yet</div>
          )}
          {changed.length ? (
            <ul data-testid="git-changed-files">
              {changed.map((f) => (
                <li key={f.path}>
                  <Badge tone={f.status === 'untracked' ? 'info' : f.status === 'deleted' ? 'bad' : 'warn'}>{f.status}</Badge> <code>{f.path}</code>
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      </Popover>
    </div>
  );
}

function PluginsMenu() {
  const [load, setLoad] = useState(false);
  return (
    <div onFocus={() => setLoad(true)} onMouseEnter={() => setLoad(true)}>
      <Popover label="Plugins" testId="plugins-menu">
        {load ? <PluginList /> : null}
      </Popover>
    </div>
  );
}

function PluginList() {
  const plugins = useApi((signal) => api.get<Plugins>('/api/plugins', { signal }), []);
  if (plugins.error) return <ErrorBox error={plugins.error} />;
  if (!plugins.data) return <span className="dp-muted">Loading…</span>;
  return (
    <div className="dp-plugin-list">
      <ul>
        {plugins.data.enabled.map((p) => (
          <li key={p.name} title={p.description}>
            <strong>{p.name}</strong> <span className="dp-muted">{p.version}</span>
          </li>
        ))}
      </ul>
      {plugins.data.disabled.length ? <div className="dp-muted">Disabled: {plugins.data.disabled.join(', ')}</div> : null}
    </div>
  );
}

function UserMenu() {
  const session = useSession();
  const { user } = session;
  return (
    <Popover
      testId="user-menu"
      label={
        <>
          <span>{user.display_name || user.username || 'local'}</span> <Badge tone="info">{user.role}</Badge>
        </>
      }
    >
      <div className="dp-user-panel">
        <div>
          Signed in as <strong>{user.username ?? 'local user'}</strong>
        </div>
        <div className="dp-muted">Role: {user.role}</div>
        {session.authEnabled ? (
          <button type="button" className="dp-btn" onClick={() => void session.logout()}>
            Log out
          </button>
        ) : (
          <div className="dp-muted">The server runs without --auth: everyone is an admin.</div>
        )}
      </div>
    </Popover>
  );
}
