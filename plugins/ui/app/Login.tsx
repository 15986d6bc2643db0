/** The login form, or the first-admin setup when auth is on and no user exists yet. */
import { useState, type FormEvent } from 'react';
import { api, ErrorBox, Field } from '@dp/ui';

export function Login({ needsSetup, onDone }: { needsSetup: boolean; onDone: () => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (needsSetup && password !== confirm) {
      setError(new Error('The two passwords differ'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      // Both answer with a token and set the HttpOnly login cookie the UI uses from here on.
      await api.post(needsSetup ? '/api/auth/setup' : '/api/auth/login', { username, password });
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="dp-login">
      <form className="dp-login-card" onSubmit={submit} aria-label={needsSetup ? 'Create the first admin' : 'Log in'}>
        <h1>dp</h1>
        <p className="dp-muted">{needsSetup ? 'No user exists yet. Create the first admin of this project.' : 'Log in to this project.'}</p>
        <Field label="Username">
          <input name="username" autoComplete="username" autoFocus required value={username} onChange={(e) => setUsername(e.target.value)} />
        </Field>
        <Field label="Password">
          <input name="password" type="password" autoComplete={needsSetup ? 'new-password' : 'current-password'} required value={password} onChange={(e) => setPassword(e.target.value)} />
        </Field>
        {needsSetup ? (
          <Field label="Repeat the password">
            <input name="confirm" type="password" autoComplete="new-password" required value={confirm} onChange={(e) => setConfirm(e.target.value)} />
          </Field>
        ) : null}
        <ErrorBox error={error} />
        <button type="submit" className="dp-btn dp-btn-primary" title={busy ? 'Signing in…' : undefined} disabled={busy}>
          {needsSetup ? 'Create admin and log in' : 'Log in'}
        </button>
      </form>
    </div>
  );
}
