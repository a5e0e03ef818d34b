import { type FormEvent, useEffect, useState } from 'react';
import { api } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Field } from '../components/field';
import { type Session, signIn, signOutReason } from '../session';

/**
 * What a pasted secret is, asked of the gateway: a management key answers GET /key; the operator
 * token answers GET /admin/organizations. Anything else gets a message saying why it was refused.
 */
async function identify(token: string): Promise<Session> {
  const headers = { Authorization: `Bearer ${token}` };
  const key = await api.GET('/key', { headers }).catch(() => {
    throw new Error('The gateway could not be reached. Check that it is running and try again.');
  });
  if (key.data) {
    if (!key.data.data.is_management_key)
      throw new Error(
        'This is an API key. The console needs a management key (or the operator token): API keys only call models.',
      );
    return { token, role: 'management', label: key.data.data.label };
  }
  if (key.response.status !== 401) throw new Error(`The gateway answered ${key.response.status}; try again.`);
  // Not a key: perhaps the operator token. Only asked for secrets that are not Gatehouse keys, so a
  // mistyped key does not count against the operator sign-in throttle.
  if (!token.startsWith('sk-')) {
    const admin = await api.GET('/admin/organizations', { headers });
    if (admin.data) return { token, role: 'operator', label: 'operator' };
    if (admin.response.status === 429)
      throw new Error('Too many failed operator sign-ins from this address. Wait a minute and try again.');
  }
  throw new Error('This key was not accepted: it is unknown, disabled or expired.');
}

/** The identity provider the gateway offers, if any (GET /auth/config). */
function useProvider() {
  const [provider, setProvider] = useState<{ name: string; login_url: string } | null>(null);
  useEffect(() => {
    api
      .GET('/auth/config')
      .then((r) => setProvider(r.data?.oidc ?? null))
      .catch(() => setProvider(null));
  }, []);
  return provider;
}

export function SignInPage() {
  const provider = useProvider();
  const [token, setToken] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(signOutReason() ? new Error(signOutReason() ?? '') : null);

  useEffect(() => {
    document.title = 'Sign in · Gatehouse console';
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setPending(true);
    setError(null);
    try {
      signIn(await identify(token.trim()));
    } catch (err) {
      setError(err);
      setPending(false);
    }
  };

  return (
    <main id="main" className="sign-in">
      <h1>Sign in to the Gatehouse console</h1>
      <p>
        Paste a management key of your organization, or the operator token (<code>GATEHOUSE_ADMIN_TOKEN</code>
        ) to manage the gateway. The key is kept in this browser tab only and forgotten when you sign out or
        close the tab.
      </p>
      <ErrorBanner error={error} />
      {provider && (
        <p>
          <a className="button" href={provider.login_url}>
            Sign in with {provider.name}
          </a>
        </p>
      )}
      <form onSubmit={submit}>
        <Field
          label="Management key or operator token"
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          required
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        <button type="submit" disabled={pending}>
          {pending ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
