import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call, type JsonBody, type JsonOk } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Field } from '../components/field';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { WorkspacePicker } from '../components/workspace-picker';
import { useResource } from '../lib/use-resource';
import { useWorkspaceParam } from '../lib/use-workspace';
import { CheckField, listText, parseList } from './guardrails/inputs';

type Credential = JsonOk<'/byok/{id}', 'get'>['data'];
type UpdateBody = JsonBody<'/byok/{id}', 'patch'>;
type CreateBody = JsonBody<'/byok', 'post'>;

const BYOK = ['byok'] as const;

function flags(c: Credential): string {
  const parts = [
    c.is_fallback && "after the gateway's key",
    c.is_byok_only && "never the gateway's key",
    c.is_required && 'marked required',
    c.declared_zdr && 'declares ZDR',
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : '—';
}

/**
 * Provider credentials (bring your own key) of a workspace. The secret goes in once, on add or rotate,
 * and is never shown again: the list has the masked label the gateway keeps.
 */
export function ByokPage() {
  const [workspace, setWorkspace] = useWorkspaceParam();
  const [editing, setEditing] = useState<string | null>(null);
  const [rotating, setRotating] = useState<string | null>(null);
  const credentials = useResource({
    queryKey: [...BYOK, workspace],
    scope: BYOK,
    list: () =>
      call(api.GET('/byok', { params: { query: { workspace_id: workspace || undefined, limit: 100 } } })),
    update: (id, body: UpdateBody) => call(api.PATCH('/byok/{id}', { params: { path: { id } }, body })),
    remove: (id) => call(api.DELETE('/byok/{id}', { params: { path: { id } } })),
    onUpdated: () => {
      setEditing(null);
      setRotating(null);
    },
  });
  const { list, update, remove } = credentials;
  const rows = list.data?.data ?? [];
  const edited = rows.find((c) => c.id === editing);
  const rotated = rows.find((c) => c.id === rotating);

  return (
    <Page title="Provider keys">
      <ErrorBanner error={list.error} />
      <ErrorBanner error={credentials.actionError} onDismiss={credentials.dismissActionError} />
      <div className="toolbar">
        <WorkspacePicker
          value={workspace}
          onChange={(w) => {
            setWorkspace(w);
            setEditing(null);
            setRotating(null);
          }}
        />
      </div>
      <AddCredential workspace={workspace} onAdded={credentials.invalidate} />
      <h2>Provider keys of the workspace</h2>
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Provider keys, by provider then try order"
          rows={rows}
          rowKey={(c) => c.id}
          empty="No provider keys: calls use the gateway's own provider accounts."
          columns={[
            { header: 'Provider', cell: (c) => c.provider },
            { header: 'Name', cell: (c) => c.name ?? '—' },
            { header: 'Key', cell: (c) => <code>{c.label}</code> },
            { header: 'Order', numeric: true, cell: (c) => c.sort_order },
            { header: 'Weight', numeric: true, cell: (c) => c.weight },
            { header: 'Options', cell: flags },
            { header: 'Models', cell: (c) => (c.allowed_models ? c.allowed_models.join(', ') : 'any') },
            { header: 'Status', cell: (c) => (c.disabled ? 'disabled' : 'active') },
            {
              header: 'Actions',
              cell: (c) => {
                const label = c.name ?? c.provider;
                return (
                  <RowActions
                    name={label}
                    confirm={`Delete “${label}” for good`}
                    busy={remove.isPending}
                    onDelete={(done) => remove.mutate(c.id, { onSettled: done })}
                  >
                    <button type="button" onClick={() => setEditing(c.id)} aria-label={`Edit ${label}`}>
                      Edit
                    </button>
                    <button type="button" onClick={() => setRotating(c.id)} aria-label={`Rotate ${label}`}>
                      Rotate
                    </button>
                    <button
                      type="button"
                      disabled={update.isPending}
                      onClick={() => update.mutate({ id: c.id, body: { disabled: !c.disabled } })}
                      aria-label={`${c.disabled ? 'Enable' : 'Disable'} ${label}`}
                    >
                      {c.disabled ? 'Enable' : 'Disable'}
                    </button>
                  </RowActions>
                );
              },
            },
          ]}
        />
      )}
      {rotated && (
        <Rotate
          key={rotated.id}
          credential={rotated}
          pending={update.isPending}
          onSave={(key) => update.mutate({ id: rotated.id, body: { key } })}
          onCancel={() => setRotating(null)}
        />
      )}
      {edited && (
        <section aria-labelledby="edit-byok">
          <h2 id="edit-byok">Edit {edited.name ?? edited.provider}</h2>
          <CredentialFields
            key={edited.id}
            initial={edited}
            pending={update.isPending}
            submitLabel="Save"
            onSubmit={(body) => update.mutate({ id: edited.id, body })}
            onCancel={() => setEditing(null)}
          />
        </section>
      )}
    </Page>
  );
}

function AddCredential({ workspace, onAdded }: { workspace: string; onAdded: () => void }) {
  const [provider, setProvider] = useState('');
  const [key, setKey] = useState('');
  const [formKey, setFormKey] = useState(0);
  const create = useMutation({
    mutationFn: (body: CreateBody) => call(api.POST('/byok', { body })),
    onSuccess: () => {
      // The secret leaves the page's state as soon as the gateway has it.
      setKey('');
      setProvider('');
      setFormKey((n) => n + 1);
      onAdded();
    },
  });
  return (
    <section aria-labelledby="add-byok">
      <h2 id="add-byok">Add a provider key</h2>
      <ErrorBanner error={create.error} onDismiss={() => create.reset()} />
      <CredentialFields
        key={formKey}
        pending={create.isPending}
        submitLabel="Add provider key"
        onSubmit={(body) =>
          create.mutate({ ...body, provider: provider.trim(), key, workspace_id: workspace || undefined })
        }
      >
        <Field
          label="Provider"
          name="provider"
          required
          value={provider}
          onChange={(e) => setProvider(e.target.value)}
          hint="Its slug, e.g. openai, anthropic"
        />
        <Field
          label="Secret key"
          name="key"
          type="password"
          autoComplete="off"
          required
          value={key}
          onChange={(e) => setKey(e.target.value)}
          hint="Stored encrypted; never shown again"
        />
      </CredentialFields>
    </section>
  );
}

/** The settings of a credential (all but provider and secret), for add and edit. */
function CredentialFields(props: {
  initial?: Credential;
  pending: boolean;
  submitLabel: string;
  onSubmit: (body: UpdateBody) => void;
  onCancel?: () => void;
  children?: React.ReactNode;
}) {
  const c = props.initial;
  const [name, setName] = useState(c?.name ?? '');
  const [weight, setWeight] = useState(String(c?.weight ?? 1));
  const [order, setOrder] = useState(c ? String(c.sort_order) : '');
  const [models, setModels] = useState(listText(c?.allowed_models));
  const [fallback, setFallback] = useState(c?.is_fallback ?? false);
  const [only, setOnly] = useState(c?.is_byok_only ?? false);
  const [required, setRequired] = useState(c?.is_required ?? false);
  const [zdr, setZdr] = useState(c?.declared_zdr ?? false);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    props.onSubmit({
      name: name.trim() || null,
      weight: Number(weight),
      ...(order.trim() !== '' ? { sort_order: Number(order) } : {}),
      allowed_models: parseList(models),
      is_fallback: fallback,
      is_byok_only: only,
      is_required: required,
      declared_zdr: zdr,
    });
  };
  return (
    <form onSubmit={submit} aria-label={c ? `Settings of ${c.name ?? c.provider}` : 'New provider key'}>
      <div className="form-row">
        {props.children}
        <Field label="Name" name="byok_name" value={name} onChange={(e) => setName(e.target.value)} />
        <Field
          label="Weight"
          name="weight"
          type="number"
          min="1"
          step="1"
          required
          value={weight}
          onChange={(e) => setWeight(e.target.value)}
          hint="Share of calls among keys of the provider"
        />
        <Field
          label="Try order"
          name="sort_order"
          type="number"
          min="0"
          step="1"
          value={order}
          onChange={(e) => setOrder(e.target.value)}
          hint={c ? 'Lower first' : 'Empty: after the others'}
        />
        <Field
          label="Allowed models"
          name="byok_models"
          value={models}
          onChange={(e) => setModels(e.target.value)}
          hint="Comma-separated; empty: any"
        />
      </div>
      <div className="form-row">
        <CheckField
          label="Fallback: tried after the gateway's own key"
          checked={fallback}
          onChange={setFallback}
        />
        <CheckField label="BYOK only: never use the gateway's own key" checked={only} onChange={setOnly} />
        <CheckField
          label="Marked as required (recorded, not enforced)"
          checked={required}
          onChange={setRequired}
        />
        <CheckField label="Provider account has zero data retention" checked={zdr} onChange={setZdr} />
      </div>
      <span className="actions">
        <button type="submit" disabled={props.pending}>
          {props.pending ? 'Saving…' : props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </span>
    </form>
  );
}

function Rotate(props: {
  credential: Credential;
  pending: boolean;
  onSave: (key: string) => void;
  onCancel: () => void;
}) {
  const [key, setKey] = useState('');
  const label = props.credential.name ?? props.credential.provider;
  return (
    <section aria-labelledby="rotate-byok">
      <h2 id="rotate-byok">Rotate {label}</h2>
      <p>The new secret replaces the old one at once; calls in flight finish with the old one.</p>
      <form
        className="form-row"
        onSubmit={(e) => {
          e.preventDefault();
          props.onSave(key);
          setKey('');
        }}
      >
        <Field
          label="New secret key"
          name="new_key"
          type="password"
          autoComplete="off"
          required
          value={key}
          onChange={(e) => setKey(e.target.value)}
        />
        <button type="submit" disabled={props.pending || key === ''}>
          Replace the key
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </form>
    </section>
  );
}
