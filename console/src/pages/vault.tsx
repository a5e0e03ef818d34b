import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ApiError, call, dataApi, type JsonOk } from '../api/client';
import { ApiKeyGate } from '../components/api-key-gate';
import { ErrorBanner } from '../components/error-banner';
import { Field } from '../components/field';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { useResource } from '../lib/use-resource';

type Secret = JsonOk<'/vault/secrets', 'get'>['data'][number];
const SECRETS = ['data', 'vault'] as const;

/** "a.com, b.com" or one per line → the list the API takes. */
const hostList = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((h) => h.trim())
    .filter(Boolean);

/**
 * The workspace's vault: secret names and the hosts each may be sent to — never a value. A value is
 * written once (create or replace) and cannot be read back.
 */
export function VaultPage() {
  return (
    <Page title="Vault">
      <ApiKeyGate>
        <Vault />
      </ApiKeyGate>
    </Page>
  );
}

function Vault() {
  const vault = useResource({
    queryKey: SECRETS,
    list: () => call(dataApi.GET('/vault/secrets', { params: { query: { limit: 100 } } })),
    remove: (name) => call(dataApi.DELETE('/vault/secrets/{name}', { params: { path: { name } } })),
  });
  const { list: secrets, remove, invalidate } = vault;
  const [replacing, setReplacing] = useState<Secret | null>(null);

  return (
    <>
      <ErrorBanner error={secrets.error} />
      {secrets.error instanceof ApiError && secrets.error.status === 404 && (
        <p className="hint">
          The vault is open to members in the interns programme (an operator enrols them). Use an API key of
          such a member.
        </p>
      )}
      <ErrorBanner error={remove.error} onDismiss={() => remove.reset()} />
      <WriteSecret
        key={replacing?.name ?? 'new'}
        replacing={replacing}
        onDone={() => {
          setReplacing(null);
          invalidate();
        }}
        onCancel={() => setReplacing(null)}
      />
      <h2>Secrets of the workspace</h2>
      {secrets.data?.has_more && (
        <p className="hint">Only the first 100 secrets are shown; the API lists the rest (with offset).</p>
      )}
      {secrets.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Vault secrets (values are never shown)"
          rows={secrets.data?.data ?? []}
          rowKey={(s) => s.name}
          empty="No secrets yet."
          columns={[
            { header: 'Name', cell: (s) => <code>{s.name}</code> },
            { header: 'Hosts', cell: (s) => (s.hosts ?? ['(any: legacy)']).join(', ') },
            {
              header: 'Transport',
              cell: (s) =>
                [
                  s.allow_http ? 'HTTPS or HTTP' : 'HTTPS only',
                  s.ports?.length ? `ports ${s.ports.join(', ')}` : '',
                ]
                  .filter(Boolean)
                  .join('; '),
            },
            {
              header: 'Fingerprint',
              cell: (s) =>
                s.fingerprint ? <code title={s.fingerprint}>{s.fingerprint.slice(0, 12)}…</code> : '—',
            },
            { header: 'Written', cell: (s) => new Date(s.created_at).toLocaleString() },
            {
              header: 'Actions',
              cell: (s) => (
                <RowActions
                  name={s.name}
                  confirm={`Delete “${s.name}” for good`}
                  busy={remove.isPending}
                  onDelete={(done) => remove.mutate(s.name, { onSettled: done })}
                >
                  <button type="button" onClick={() => setReplacing(s)} aria-label={`Replace ${s.name}`}>
                    Replace
                  </button>
                </RowActions>
              ),
            },
          ]}
        />
      )}
    </>
  );
}

function WriteSecret({
  replacing,
  onDone,
  onCancel,
}: {
  replacing: Secret | null;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState(replacing?.name ?? '');
  const [value, setValue] = useState('');
  const [hosts, setHosts] = useState((replacing?.hosts ?? []).join(', '));
  const [ports, setPorts] = useState((replacing?.ports ?? []).join(', '));
  const [allowHttp, setAllowHttp] = useState(replacing?.allow_http === true);
  const [saved, setSaved] = useState<string | null>(null);
  const write = useMutation({
    mutationFn: () =>
      call(
        dataApi.PUT('/vault/secrets/{name}', {
          params: { path: { name: name.trim() } },
          body: {
            value,
            hosts: hostList(hosts),
            ...(allowHttp ? { allow_http: true } : {}),
            ...(hostList(ports).length ? { ports: hostList(ports).map(Number) } : {}),
          },
        }),
      ),
    onSuccess: (res) => {
      // The value leaves the page's memory as soon as the vault has it.
      setValue('');
      setSaved(res.data.name);
      if (!replacing) {
        setName('');
        setHosts('');
        setPorts('');
        setAllowHttp(false);
      }
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSaved(null);
    write.mutate();
  };
  const title = replacing ? `Replace “${replacing.name}”` : 'Store a secret';
  return (
    <section aria-labelledby="write-secret">
      <h2 id="write-secret">{title}</h2>
      <p className="hint">
        The value is encrypted at rest and can never be read back — not here, not through the API. Interns
        send it only to the hosts listed.
      </p>
      <ErrorBanner error={write.error} onDismiss={() => write.reset()} />
      {saved && (
        <div className="banner banner-ok" role="status">
          Secret “{saved}” stored.
        </div>
      )}
      <form className="form-row" onSubmit={submit}>
        <Field
          label="Name"
          name="name"
          required
          readOnly={!!replacing}
          value={name}
          onChange={(e) => setName(e.target.value)}
          hint="Lowercase letters, digits and single underscores, e.g. stripe_key"
        />
        <Field
          label="Value"
          name="value"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          hint="At least 8 characters; write-only"
        />
        <Field
          label="Hosts"
          name="hosts"
          required
          value={hosts}
          onChange={(e) => setHosts(e.target.value)}
          hint="Exact hostnames, comma-separated, e.g. api.example.com"
        />
        <Field
          label="Extra ports"
          name="ports"
          value={ports}
          onChange={(e) => setPorts(e.target.value)}
          hint="Beyond 443 (or 80), e.g. 8443"
        />
        <div className="field checkbox">
          <label>
            <input
              type="checkbox"
              name="allow_http"
              checked={allowHttp}
              onChange={(e) => setAllowHttp(e.target.checked)}
            />{' '}
            Also over plain HTTP
          </label>
        </div>
        <button type="submit" disabled={write.isPending}>
          {write.isPending ? 'Saving…' : replacing ? 'Replace value' : 'Store secret'}
        </button>
        {replacing && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </form>
    </section>
  );
}
