/**
 * Administration (admins): users (add, change role, reset password, remove) and secrets of the
 * project's .env (names only: set a value, delete; a value is never shown), over the kernel's
 * /api/users and /api/secrets routes.
 */
import { useState } from 'react';
import { api, Dialog, Empty, ErrorBox, Field, Loading, PageHeader, seg, Table, Tabs, useApi, useCan, useSession, type PageProps } from '@dp/ui';

interface User {
  username: string;
  role: 'viewer' | 'editor' | 'admin';
  display_name: string | null;
  created_at: string;
  last_login: string | null;
}

const ROLES = ['viewer', 'editor', 'admin'] as const;
const ROLE_HELP: Record<(typeof ROLES)[number], string> = {
  viewer: 'reads tables, runs read-only queries',
  editor: 'also edits files and runs transforms',
  admin: 'also manages users, secrets and the environment',
};
const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

export default function AdminPage({ page }: PageProps) {
  const canUsers = useCan('manage_users');
  const canSecrets = useCan('manage_secrets');
  const [tab, setTab] = useState<'users' | 'secrets'>(canUsers ? 'users' : 'secrets');
  return (
    <>
      <PageHeader title={page.title} subtitle="Who may use this server, and the secrets its connections read" />
      <Tabs
        tabs={[...(canUsers ? [{ key: 'users' as const, label: 'Users' }] : []), ...(canSecrets ? [{ key: 'secrets' as const, label: 'Secrets' }] : [])]}
        active={tab}
        onChange={setTab}
      />
      {tab === 'users' && canUsers ? <Users /> : null}
      {tab === 'secrets' && canSecrets ? <Secrets /> : null}
    </>
  );
}

function Users() {
  const session = useSession();
  const users = useApi((signal) => api.get<User[]>('/api/users', { signal }), []);
  const [error, setError] = useState<unknown>(null);
  const [adding, setAdding] = useState(false);
  const [resetFor, setResetFor] = useState<string | null>(null);
  const [removing, setRemoving] = useState<string | null>(null);
  const me = session.user?.username ?? null;

  const act = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      users.reload();
      return true;
    } catch (e) {
      setError(e);
      return false;
    }
  };

  if (users.error) return <ErrorBox error={users.error} onRetry={users.reload} />;
  if (!users.data) return <Loading />;
  if (!session.authEnabled) return <Empty>This server runs without --auth: everyone is an admin and there are no users to manage.</Empty>;
  return (
    <>
      <div className="dp-row">
        <button type="button" className="dp-btn dp-btn-primary" onClick={() => setAdding(true)}>
          + Add user
        </button>
        <span className="dp-muted">A new role or password signs the user out everywhere.</span>
      </div>
      <ErrorBox error={error} />
      <Table
        rows={users.data}
        rowKey={(u) => u.username}
        columns={[
          { key: 'username', header: 'User', render: (u) => <strong>{u.username}</strong> },
          { key: 'display_name', header: 'Name', render: (u) => u.display_name ?? '' },
          {
            key: 'role',
            header: 'Role',
            render: (u) => (
              <select
                aria-label={`Role of ${u.username}`}
                value={u.role}
                disabled={u.username === me}
                title={u.username === me ? 'You cannot change your own role (another admin can)' : ROLE_HELP[u.role]}
                onChange={(e) => void act(() => api.put(`/api/users/${seg(u.username)}`, { role: e.target.value }))}
              >
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            ),
          },
          { key: 'last_login', header: 'Last login', render: (u) => (u.last_login ? new Date(u.last_login).toLocaleString() : 'never') },
          {
            key: 'actions',
            header: '',
            align: 'right',
            render: (u) => (
              <div className="dp-toolbar" style={{ justifyContent: 'flex-end' }}>
                <button type="button" className="dp-btn dp-btn-small" onClick={() => setResetFor(u.username)} aria-label={`Reset the password of ${u.username}`}>
                  Reset password
                </button>
                <button
                  type="button"
                  className="dp-btn dp-btn-small dp-btn-danger"
                  disabled={u.username === me}
                  title={u.username === me ? 'You cannot remove yourself' : `Remove ${u.username}`}
                  onClick={() => setRemoving(u.username)}
                  aria-label={`Remove ${u.username}`}
                >
                  Remove
                </button>
              </div>
            ),
          },
        ]}
      />
      <AddUserDialog open={adding} onClose={() => setAdding(false)} onAdd={(body) => act(() => api.post('/api/users', body))} />
      <PasswordDialog username={resetFor} onClose={() => setResetFor(null)} onSet={(password) => act(() => api.put(`/api/users/${seg(resetFor!)}`, { password }))} />
      <Dialog
        open={removing !== null}
        title={`Remove ${removing}?`}
        onClose={() => setRemoving(null)}
        footer={
          <>
            <button type="button" className="dp-btn" onClick={() => setRemoving(null)}>
              Cancel
            </button>
            <button type="button" className="dp-btn dp-btn-danger" onClick={() => void act(() => api.del(`/api/users/${seg(removing!)}`)).then(() => setRemoving(null))}>
              Remove
            </button>
          </>
        }
      >
        <p>{removing} is signed out everywhere and can no longer log in.</p>
      </Dialog>
    </>
  );
}

function AddUserDialog({ open, onClose, onAdd }: { open: boolean; onClose: () => void; onAdd: (body: { username: string; password: string; role: string; display_name?: string }) => Promise<boolean> }) {
  const [username, setUsername] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<(typeof ROLES)[number]>('viewer');
  const blocked = !username.trim() ? 'Enter a username' : password.length < 8 ? 'The password needs at least 8 characters' : null;
  const submit = async () => {
    if (blocked) return;
    if (await onAdd({ username: username.trim(), password, role, ...(displayName.trim() ? { display_name: displayName.trim() } : {}) })) {
      setUsername('');
      setDisplayName('');
      setPassword('');
      setRole('viewer');
      onClose();
    }
  };
  return (
    <Dialog
      open={open}
      title="Add a user"
      onClose={onClose}
      footer={
        <>
          <button type="button" className="dp-btn" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="dp-btn dp-btn-primary" disabled={!!blocked} title={blocked ?? undefined} onClick={() => void submit()}>
            Add user
          </button>
        </>
      }
    >
      <Field label="Username">
        <input value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="off" aria-label="New username" />
      </Field>
      <Field label="Display name (optional)">
        <input value={displayName} onChange={(e) => setDisplayName(e.target.value)} aria-label="Display name" />
      </Field>
      <Field label="Password" hint="At least 8 characters; they can be asked to change it.">
        <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="new-password" aria-label="New user's password" />
      </Field>
      <Field label="Role" hint={ROLE_HELP[role]}>
        <select value={role} onChange={(e) => setRole(e.target.value as (typeof ROLES)[number])} aria-label="New user's role">
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </Field>
    </Dialog>
  );
}

function PasswordDialog({ username, onClose, onSet }: { username: string | null; onClose: () => void; onSet: (password: string) => Promise<boolean> }) {
  const [password, setPassword] = useState('');
  const blocked = password.length < 8 ? 'The password needs at least 8 characters' : null;
  return (
    <Dialog
      open={username !== null}
      title={`New password for ${username}`}
      onClose={() => {
        setPassword('');
        onClose();
      }}
      footer={
        <>
          <button type="button" className="dp-btn" onClick={onClose}>
            Cancel
          </button>
          <button
            type="button"
            className="dp-btn dp-btn-primary"
            disabled={!!blocked}
            title={blocked ?? undefined}
            onClick={() =>
              void onSet(password).then((ok) => {
                if (ok) {
                  setPassword('');
                  onClose();
                }
              })
            }
          >
            Set password
          </button>
        </>
      }
    >
      <Field label="New password" hint="Signs them out everywhere; tell them the new one yourself.">
        <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="new-password" aria-label="New password" />
      </Field>
    </Dialog>
  );
}

function Secrets() {
  // The API answers masked values too; this page shows names only.
  const secrets = useApi((signal) => api.get<Array<{ key: string }>>('/api/secrets', { signal }), []);
  const [error, setError] = useState<unknown>(null);
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [deleting, setDeleting] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const exists = !!secrets.data?.some((s) => s.key === key);
  const blocked = !key ? 'Enter a name' : !KEY.test(key) ? 'A name is letters, digits and _ (not starting with a digit)' : !value ? 'Enter the value' : null;

  const set = async () => {
    setError(null);
    setSaved(null);
    try {
      await api.post('/api/secrets', { key, value });
      setSaved(`${key} ${exists ? 'updated' : 'saved'}`);
      setKey('');
      setValue('');
      secrets.reload();
    } catch (e) {
      setError(e);
    }
  };
  const remove = async (name: string) => {
    setError(null);
    setSaved(null);
    try {
      await api.del(`/api/secrets/${seg(name)}`);
      setDeleting(null);
      secrets.reload();
    } catch (e) {
      setError(e);
    }
  };

  if (secrets.error) return <ErrorBox error={secrets.error} onRetry={secrets.reload} />;
  if (!secrets.data) return <Loading />;
  return (
    <>
      <p className="dp-muted">Kept in the project&apos;s .env; project.yml refers to them as {'${NAME}'}. Values are never shown again after they are set.</p>
      <form
        className="dp-row"
        onSubmit={(e) => {
          e.preventDefault();
          if (!blocked) void set();
        }}
      >
        <input value={key} onChange={(e) => setKey(e.target.value)} placeholder="NAME" aria-label="Secret name" autoComplete="off" />
        <input type="password" value={value} onChange={(e) => setValue(e.target.value)} placeholder="value" aria-label="Secret value" autoComplete="new-password" />
        <button type="submit" className="dp-btn dp-btn-primary" disabled={!!blocked} title={blocked ?? undefined}>
          {exists ? 'Replace secret' : 'Set secret'}
        </button>
        {saved ? (
          <span role="status" className="dp-muted">
            {saved}
          </span>
        ) : null}
      </form>
      <ErrorBox error={error} />
      <Table
        rows={secrets.data}
        rowKey={(s) => s.key}
        empty="No secrets in .env yet."
        columns={[
          { key: 'key', header: 'Name', render: (s) => <code>{s.key}</code> },
          {
            key: 'actions',
            header: '',
            align: 'right',
            render: (s) => (
              <button type="button" className="dp-btn dp-btn-small dp-btn-danger" aria-label={`Delete ${s.key}`} onClick={() => setDeleting(s.key)}>
                Delete
              </button>
            ),
          },
        ]}
      />
      <Dialog
        open={deleting !== null}
        title={`Delete ${deleting}?`}
        onClose={() => setDeleting(null)}
        footer={
          <>
            <button type="button" className="dp-btn" onClick={() => setDeleting(null)}>
              Cancel
            </button>
            <button type="button" className="dp-btn dp-btn-danger" onClick={() => void remove(deleting!)}>
              Delete
            </button>
          </>
        }
      >
        <p>Connections and settings that refer to {'${' + (deleting ?? '') + '}'} stop working until it is set again.</p>
      </Dialog>
    </>
  );
}
