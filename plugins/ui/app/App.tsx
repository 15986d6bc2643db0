/**
 * The shell: finds out whether a login is needed, then shows the header, the navigation of the
 * pages enabled plugins contribute (GET /api/ui/pages) and the current page, each loaded lazily.
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Navigate, Route, Routes, useLocation } from 'react-router-dom';
import { api, ApiError, ErrorBox, Loading, onUnauthorized, roleCan, SessionProvider, type Permission, type Session, type SessionUser } from '@dp/ui';
import { Header } from './Header';
import { Login } from './Login';
import { Nav } from './Nav';
import { PageHost, type UiPage } from './PageHost';

interface AuthStatus {
  auth_enabled: boolean;
  needs_setup: boolean;
}

type Phase = { kind: 'loading' } | { kind: 'error'; error: unknown } | { kind: 'login'; needsSetup: boolean } | { kind: 'ready'; user: SessionUser; authEnabled: boolean };

export function App() {
  const [phase, setPhase] = useState<Phase>({ kind: 'loading' });
  const [tick, setTick] = useState(0);

  const start = useCallback(async () => {
    try {
      const status = await api.get<AuthStatus>('/api/auth/status');
      if (status.auth_enabled && status.needs_setup) return setPhase({ kind: 'login', needsSetup: true });
      try {
        const user = await api.get<SessionUser>('/api/auth/me');
        setPhase({ kind: 'ready', user, authEnabled: status.auth_enabled });
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return setPhase({ kind: 'login', needsSetup: false });
        throw e;
      }
    } catch (e) {
      setPhase({ kind: 'error', error: e });
    }
  }, []);

  useEffect(() => {
    void start();
  }, [start, tick]);
  // A call that answers 401 (token expired or revoked): back to the login form.
  useEffect(() => onUnauthorized(() => setPhase((p) => (p.kind === 'ready' && p.authEnabled ? { kind: 'login', needsSetup: false } : p))), []);

  if (phase.kind === 'loading') return <Loading label="Starting…" />;
  if (phase.kind === 'error') {
    return (
      <div className="dp-center">
        <ErrorBox error={phase.error} onRetry={() => setTick((t) => t + 1)} />
      </div>
    );
  }
  if (phase.kind === 'login') return <Login needsSetup={phase.needsSetup} onDone={() => setTick((t) => t + 1)} />;
  return <Workbench user={phase.user} authEnabled={phase.authEnabled} onLoggedOut={() => setTick((t) => t + 1)} />;
}

interface Health {
  status: string;
  project?: string;
  environment?: string | null;
}

function Workbench({ user, authEnabled, onLoggedOut }: { user: SessionUser; authEnabled: boolean; onLoggedOut: () => void }) {
  const [pages, setPages] = useState<UiPage[] | null>(null);
  const [plugins, setPlugins] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [health, setHealth] = useState<Health | null>(null);
  const [refreshTick, setRefreshTick] = useState(0);
  const location = useLocation();

  useEffect(() => {
    let live = true;
    Promise.all([api.get<{ pages: UiPage[]; plugins: string[] }>('/api/ui/pages'), api.get<Health>('/api/health')])
      .then(([p, h]) => {
        if (!live) return;
        setPages(p.pages);
        setPlugins(p.plugins ?? []);
        setHealth(h);
        setError(null);
      })
      .catch((e) => live && setError(e));
    return () => {
      live = false;
    };
  }, [refreshTick]);

  const session: Session = useMemo(
    () => ({
      authEnabled,
      user,
      project: { name: health?.project ?? '', environment: health?.environment ?? null },
      plugins,
      can: (p: Permission) => roleCan(user.role, p),
      logout: async () => {
        await api.post('/api/auth/logout').catch(() => undefined);
        onLoggedOut();
      },
      refresh: () => setRefreshTick((t) => t + 1),
    }),
    [authEnabled, user, health, plugins, onLoggedOut],
  );

  if (error && !pages) {
    return (
      <div className="dp-center">
        <ErrorBox error={error} onRetry={() => setRefreshTick((t) => t + 1)} />
      </div>
    );
  }
  if (!pages) return <Loading label="Loading pages…" />;
  const home = pages[0]?.path ?? null;

  return (
    <SessionProvider value={session}>
      <div className="dp-app">
        <a className="dp-skip" href="#dp-main">
          Skip to content
        </a>
        <Header health={health} onHealth={setHealth} />
        <div className="dp-body">
          <Nav pages={pages} />
          <main id="dp-main" className="dp-main" tabIndex={-1}>
            <Routes>
              {pages.map((p) => (
                <Route key={p.path} path={`${p.path}/*`} element={<PageHost page={p} key={`${p.path}:${refreshTick}`} />} />
              ))}
              <Route path="/" element={home ? <Navigate to={home} replace /> : <NoPages />} />
              <Route path="*" element={<NotFound path={location.pathname} />} />
            </Routes>
          </main>
        </div>
      </div>
    </SessionProvider>
  );
}

function NoPages() {
  return (
    <div className="dp-center dp-muted">
      <p>No pages: no enabled plugin contributes a page your role may see.</p>
      <p>
        The API is described at <a href="/docs">/docs</a>.
      </p>
    </div>
  );
}

function NotFound({ path }: { path: string }) {
  return (
    <div className="dp-center" role="alert">
      <h1>No page at {path}</h1>
      <p className="dp-muted">The plugin that offers it may be disabled, or your role may not see it.</p>
    </div>
  );
}
