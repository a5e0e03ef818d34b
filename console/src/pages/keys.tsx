import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call, type JsonBody, type JsonOk } from '../api/client';
import { CopyButton } from '../components/copy-button';
import { ErrorBanner } from '../components/error-banner';
import { Field, SelectField } from '../components/field';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { WorkspacePicker } from '../components/workspace-picker';
import { useResource } from '../lib/use-resource';
import { useWorkspaceParam } from '../lib/use-workspace';

type ApiKey = JsonOk<'/keys', 'get'>['data'][number];
type Reset = 'daily' | 'weekly' | 'monthly' | null;

const KEYS = ['keys'] as const;
const RESETS = [
  { value: '', label: 'Never (lifetime)' },
  { value: 'daily', label: 'Daily' },
  { value: 'weekly', label: 'Weekly' },
  { value: 'monthly', label: 'Monthly' },
];

/** '' → null (no limit), else the number the field holds. */
const numberOrNull = (s: string) => (s.trim() === '' ? null : Number(s));
const usd = (n: number) => `$${n.toFixed(n !== 0 && n < 0.01 ? 4 : 2)}`;

function limitText(k: ApiKey): string {
  if (k.limit === null) return 'none';
  return `${usd(k.limit)}${k.limit_reset ? ` ${k.limit_reset}` : ''}`;
}

function rateText(k: ApiKey): string {
  const parts = [
    k.rpm_limit !== null && `${k.rpm_limit} rpm`,
    k.tpm_limit !== null && `${k.tpm_limit} tpm`,
    k.concurrency_limit !== null && `${k.concurrency_limit} at once`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'none';
}

/** The API keys of a workspace: list, create (secret shown once), edit, disable, delete. */
export function KeysPage() {
  const [workspace, setWorkspace] = useWorkspaceParam();
  // The one-time secret lives only in this component's state: leaving the page drops it for good.
  const [secret, setSecret] = useState<{ name: string; key: string } | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const keys = useResource({
    queryKey: [...KEYS, workspace],
    scope: KEYS,
    list: () =>
      call(
        api.GET('/keys', {
          params: { query: { include_disabled: true, workspace_id: workspace || undefined } },
        }),
      ),
    update: (hash, body: UpdateBody) => call(api.PATCH('/keys/{hash}', { params: { path: { hash } }, body })),
    remove: (hash) => call(api.DELETE('/keys/{hash}', { params: { path: { hash } } })),
    onUpdated: () => setEditing(null),
  });
  const { list, update, remove } = keys;

  return (
    <Page title="Keys">
      <ErrorBanner error={list.error} />
      <ErrorBanner error={keys.actionError} onDismiss={keys.dismissActionError} />
      <div className="toolbar">
        <WorkspacePicker
          value={workspace}
          onChange={(w) => {
            setWorkspace(w);
            setEditing(null);
          }}
        />
      </div>
      {secret && <NewSecret name={secret.name} secret={secret.key} onDone={() => setSecret(null)} />}
      <CreateKey
        workspace={workspace}
        onCreated={(name, key) => {
          setSecret({ name, key });
          keys.invalidate();
        }}
      />
      <h2>Keys of the workspace</h2>
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="API keys"
          rows={list.data?.data ?? []}
          rowKey={(k) => k.hash}
          empty="No API keys yet."
          columns={[
            { header: 'Name', cell: (k) => k.name },
            { header: 'Key', cell: (k) => <code>{k.label}</code> },
            { header: 'Spend limit', cell: limitText },
            { header: 'Rate limits', cell: rateText },
            { header: 'Usage', numeric: true, cell: (k) => usd(k.usage) },
            { header: 'Status', cell: (k) => (k.disabled ? 'disabled' : 'active') },
            {
              header: 'Expires',
              cell: (k) => (k.expires_at ? new Date(k.expires_at).toLocaleString() : 'never'),
            },
            {
              header: 'Actions',
              cell: (k) =>
                editing === k.hash ? (
                  <EditLimits
                    apiKey={k}
                    pending={update.isPending}
                    onSave={(body) => update.mutate({ id: k.hash, body })}
                    onCancel={() => setEditing(null)}
                  />
                ) : (
                  <RowActions
                    name={k.name}
                    confirm={`Delete “${k.name}” for good`}
                    busy={keys.busy}
                    onDelete={(done) => remove.mutate(k.hash, { onSettled: done })}
                  >
                    <button
                      type="button"
                      disabled={keys.busy}
                      onClick={() => setEditing(k.hash)}
                      aria-label={`Edit limits of ${k.name}`}
                    >
                      Edit
                    </button>
                    <button
                      type="button"
                      disabled={keys.busy}
                      onClick={() => update.mutate({ id: k.hash, body: { disabled: !k.disabled } })}
                      aria-label={`${k.disabled ? 'Enable' : 'Disable'} ${k.name}`}
                    >
                      {k.disabled ? 'Enable' : 'Disable'}
                    </button>
                  </RowActions>
                ),
            },
          ]}
        />
      )}
    </Page>
  );
}

type UpdateBody = JsonBody<'/keys/{hash}', 'patch'>;
type CreateBody = JsonBody<'/keys', 'post'>;

function NewSecret({ name, secret, onDone }: { name: string; secret: string; onDone: () => void }) {
  return (
    <section className="banner banner-secret" aria-labelledby="new-secret">
      <h2 id="new-secret">Key “{name}” created</h2>
      <p>Copy the key now: it is shown only this once and cannot be shown again.</p>
      <p>
        <code className="secret" data-testid="new-secret">
          {secret}
        </code>{' '}
        <CopyButton text={secret} label="Copy key" />
      </p>
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}

function CreateKey({
  workspace,
  onCreated,
}: {
  workspace: string;
  onCreated: (name: string, key: string) => void;
}) {
  const [name, setName] = useState('');
  const [limit, setLimit] = useState('');
  const [reset, setReset] = useState('');
  const [expires, setExpires] = useState('');
  const create = useMutation({
    mutationFn: (body: CreateBody) => call(api.POST('/keys', { body })),
    onSuccess: (res) => {
      onCreated(res.data.name, res.key);
      setName('');
      setLimit('');
      setReset('');
      setExpires('');
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      name: name.trim(),
      limit: numberOrNull(limit),
      limit_reset: (reset || null) as Reset,
      // datetime-local is the browser's local time; the API wants an instant with its zone.
      expires_at: expires ? new Date(expires).toISOString() : null,
      ...(workspace ? { workspace_id: workspace } : {}),
    });
  };
  return (
    <section aria-labelledby="create-key">
      <h2 id="create-key">Create a key</h2>
      <ErrorBanner error={create.error} onDismiss={() => create.reset()} />
      <form className="form-row" onSubmit={submit}>
        <Field label="Name" name="name" required value={name} onChange={(e) => setName(e.target.value)} />
        <Field
          label="Spend limit (USD)"
          name="limit"
          type="number"
          min="0"
          step="any"
          value={limit}
          onChange={(e) => setLimit(e.target.value)}
          hint="Empty: no limit"
        />
        <SelectField
          label="Limit resets"
          name="limit_reset"
          value={reset}
          onChange={setReset}
          options={RESETS}
        />
        <Field
          label="Expires"
          name="expires_at"
          type="datetime-local"
          value={expires}
          onChange={(e) => setExpires(e.target.value)}
          hint="Empty: never"
        />
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create key'}
        </button>
      </form>
    </section>
  );
}

function EditLimits(props: {
  apiKey: ApiKey;
  pending: boolean;
  onSave: (body: UpdateBody) => void;
  onCancel: () => void;
}) {
  const k = props.apiKey;
  const text = (n: number | null) => (n === null ? '' : String(n));
  const [limit, setLimit] = useState(text(k.limit));
  const [reset, setReset] = useState(k.limit_reset ?? '');
  const [rpm, setRpm] = useState(text(k.rpm_limit));
  const [tpm, setTpm] = useState(text(k.tpm_limit));
  const [concurrency, setConcurrency] = useState(text(k.concurrency_limit));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    props.onSave({
      limit: numberOrNull(limit),
      limit_reset: (reset || null) as Reset,
      rpm_limit: numberOrNull(rpm),
      tpm_limit: numberOrNull(tpm),
      concurrency_limit: numberOrNull(concurrency),
    });
  };
  const whole = { type: 'number', min: '1', step: '1', hint: 'Empty: none' } as const;
  return (
    <form className="edit" onSubmit={submit} aria-label={`Limits of ${k.name}`}>
      <Field
        label="Spend limit (USD)"
        type="number"
        min="0"
        step="any"
        value={limit}
        onChange={(e) => setLimit(e.target.value)}
      />
      <SelectField label="Limit resets" value={reset} onChange={setReset} options={RESETS} />
      <Field label="Requests per minute" {...whole} value={rpm} onChange={(e) => setRpm(e.target.value)} />
      <Field label="Tokens per minute" {...whole} value={tpm} onChange={(e) => setTpm(e.target.value)} />
      <Field
        label="Calls at once"
        {...whole}
        value={concurrency}
        onChange={(e) => setConcurrency(e.target.value)}
      />
      <span className="actions">
        <button type="submit" disabled={props.pending}>
          Save
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </span>
    </form>
  );
}
