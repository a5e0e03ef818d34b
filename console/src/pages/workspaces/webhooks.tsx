import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call, type JsonOk } from '../../api/client';
import { CopyButton } from '../../components/copy-button';
import { ErrorBanner } from '../../components/error-banner';
import { Field } from '../../components/field';
import { WORKSPACES } from '../../components/workspace-picker';

type Workspace = JsonOk<'/workspaces/{id}', 'get'>['data'];

/**
 * A workspace's video webhooks: where its video jobs without a callback_url report, and the secret
 * their events are signed with (made here and shown this once; afterwards only whether there is one).
 */
export function VideoWebhooks({ workspace }: { workspace: Workspace }) {
  const client = useQueryClient();
  const refresh = () => client.invalidateQueries({ queryKey: WORKSPACES });
  const id = workspace.id;
  const [url, setUrl] = useState(workspace.video_callback_url ?? '');
  const [secret, setSecret] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (value: string | null) =>
      call(api.PATCH('/workspaces/{id}', { params: { path: { id } }, body: { video_callback_url: value } })),
    onSuccess: refresh,
  });
  const make = useMutation({
    mutationFn: () => call(api.POST('/workspaces/{id}/webhook-secret', { params: { path: { id } } })),
    onSuccess: (res) => {
      setSecret(res.data.signing_secret);
      return refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => call(api.DELETE('/workspaces/{id}/webhook-secret', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  const busy = save.isPending || make.isPending || remove.isPending;
  return (
    <>
      <h3>Video webhooks</h3>
      <p className="hint">
        A video job's end is POSTed to its callback_url, or to this address when it has none. With a signing
        secret, each event carries an X-OpenRouter-Signature header.
      </p>
      <ErrorBanner error={save.error} onDismiss={() => save.reset()} />
      <ErrorBanner
        error={make.error ?? remove.error}
        onDismiss={() => {
          make.reset();
          remove.reset();
        }}
      />
      <form
        className="form-row"
        aria-label={`Video webhooks of ${workspace.name}`}
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(url.trim() || null);
        }}
      >
        <Field
          label="Default callback URL"
          name="video_callback_url"
          type="url"
          value={url}
          onChange={(e) => setUrl(e.target.value)}
          placeholder="https://hooks.example.com/video"
          hint="https:// only; empty: jobs without a callback_url report to nobody"
        />
        <button type="submit" disabled={busy}>
          {save.isPending ? 'Saving…' : 'Save callback URL'}
        </button>
      </form>
      <p data-testid="webhook-signing">
        {workspace.has_webhook_secret ? 'Events are signed.' : 'Events are not signed.'}{' '}
        <button type="button" disabled={busy} onClick={() => make.mutate()}>
          {workspace.has_webhook_secret ? 'Replace the signing secret' : 'Make a signing secret'}
        </button>{' '}
        {workspace.has_webhook_secret && (
          <button type="button" disabled={busy} onClick={() => remove.mutate()}>
            Remove the signing secret
          </button>
        )}
      </p>
      {secret && (
        <section className="banner banner-secret" aria-labelledby="new-webhook-secret">
          <h4 id="new-webhook-secret">Signing secret of “{workspace.name}”</h4>
          <p>Copy it now: it is shown only this once. The one it replaced no longer signs.</p>
          <p>
            <code className="secret" data-testid="new-webhook-secret">
              {secret}
            </code>{' '}
            <CopyButton text={secret} label="Copy secret" />
          </p>
          <button type="button" onClick={() => setSecret(null)}>
            I have copied it
          </button>
        </section>
      )}
    </>
  );
}
