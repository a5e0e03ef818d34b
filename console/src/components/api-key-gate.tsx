import { type FormEvent, type ReactNode, useState } from 'react';
import { api, apiKeyDropReason, call, clearApiKeyDropReason } from '../api/client';
import { setApiKey, useSession } from '../session';
import { ErrorBanner } from './error-banner';
import { Field } from './field';

/** How long a key the console creates for itself lives. */
const TEMPORARY_KEY_HOURS = 24;

/** What a pasted secret is: it must be an API key of the signed-in organization's gateway. */
async function checkApiKey(key: string): Promise<{ key: string; label: string }> {
  const res = await api.GET('/key', { headers: { Authorization: `Bearer ${key}` } }).catch(() => {
    throw new Error('The gateway could not be reached. Check that it is running and try again.');
  });
  if (!res.data) throw new Error('This API key was not accepted: it is unknown, disabled or expired.');
  if (res.data.data.is_management_key)
    throw new Error('This is a management key. These pages need an API key (it may call models).');
  return { key, label: res.data.data.label };
}

/**
 * The pages that call models, batches, presets, interns and the vault need an API key: a management key may
 * not call them. Renders its children once the session has one; until then, asks for one — pasted,
 * or a temporary key the console creates in the default workspace (it expires in a day and is listed
 * on the Keys page like any other).
 */
export function ApiKeyGate({ children }: { children: ReactNode }) {
  const session = useSession();
  const [pasted, setPasted] = useState('');
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // Read at each render: the key may be dropped while this gate is already showing its page.
  const dropped = apiKeyDropReason();

  if (session?.apiKey)
    return (
      <>
        <p className="hint">
          Calling with API key <code>{session.apiKey.label}</code>.{' '}
          <button type="button" className="link" onClick={() => setApiKey(null)}>
            Use another
          </button>
        </p>
        {children}
      </>
    );

  const run = async (get: () => Promise<{ key: string; label: string }>) => {
    setPending(true);
    setError(null);
    try {
      const key = await get();
      clearApiKeyDropReason();
      setApiKey(key);
    } catch (err) {
      setError(err);
    } finally {
      setPending(false);
    }
  };
  const submitPasted = (e: FormEvent) => {
    e.preventDefault();
    void run(() => checkApiKey(pasted.trim()));
  };
  const createTemporary = () =>
    run(async () => {
      const expires = new Date(Date.now() + TEMPORARY_KEY_HOURS * 3_600_000).toISOString();
      const made = await call(
        api.POST('/keys', {
          body: { name: `console session ${new Date().toISOString()}`, expires_at: expires },
        }),
      );
      return { key: made.key, label: made.data.label };
    });

  return (
    <section className="sign-in" aria-labelledby="api-key-gate">
      <h2 id="api-key-gate">An API key is needed here</h2>
      <p>
        This page calls models (or batches, presets, interns, the vault), which a management key may not do.
        Paste an API key of your organization, or let the console create a temporary one for this session.
      </p>
      <ErrorBanner error={error ?? (dropped ? new Error(dropped) : null)} />
      <form onSubmit={submitPasted} className="form-row">
        <Field
          label="API key"
          type="password"
          autoComplete="off"
          value={pasted}
          onChange={(e) => setPasted(e.target.value)}
          required
        />
        <button type="submit" disabled={pending || pasted.trim() === ''}>
          Use this key
        </button>
      </form>
      {session?.role === 'management' && (
        <p>
          <button type="button" onClick={createTemporary} disabled={pending}>
            Create a temporary key ({TEMPORARY_KEY_HOURS} h)
          </button>
        </p>
      )}
    </section>
  );
}
