import { useState } from 'react';
import { call, dataApi } from '../api/client';
import { ApiKeyGate } from '../components/api-key-gate';
import { ErrorBanner } from '../components/error-banner';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { useResource } from '../lib/use-resource';
import { PRESETS, PresetDetail, usePreset } from './presets/detail';
import { CreatePreset } from './presets/forms';

/**
 * The presets of the API key's workspace (`@preset/<slug>`): list, create, open one (its current
 * configuration, versions and how to call it), save a new version, delete.
 */
export function PresetsPage() {
  return (
    <Page title="Presets">
      <ApiKeyGate>
        <Presets />
      </ApiKeyGate>
    </Page>
  );
}

function Presets() {
  const [open, setOpen] = useState<string | null>(null);
  const { list, remove, invalidate } = useResource({
    queryKey: [...PRESETS, 'list'],
    // A save or a deletion refreshes the list, the open preset and its versions.
    scope: PRESETS,
    list: () => call(dataApi.GET('/presets', { params: { query: { limit: 100 } } })),
    remove: (slug) => call(dataApi.DELETE('/presets/{slug}', { params: { path: { slug } } })),
  });
  const rows = list.data?.data ?? [];

  return (
    <>
      <ErrorBanner error={list.error} />
      <ErrorBanner error={remove.error} onDismiss={() => remove.reset()} />
      <CreatePreset
        onCreated={(slug) => {
          setOpen(slug);
          void invalidate();
        }}
      />
      {open && <PresetDetail slug={open} onClose={() => setOpen(null)} onSaved={() => void invalidate()} />}
      <h2>Presets of the workspace</h2>
      {list.data && list.data.total_count > rows.length && (
        <p className="hint">
          The {rows.length} most recently updated of {list.data.total_count} are shown; the API lists the rest
          (with offset).
        </p>
      )}
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Presets, most recently updated first"
          rows={rows}
          rowKey={(p) => p.id}
          empty="No presets yet."
          columns={[
            { header: 'Slug', cell: (p) => <code>{p.slug}</code> },
            {
              header: 'Name',
              cell: (p) => (
                <>
                  {p.name}
                  {p.description && <span className="hint"> — {p.description}</span>}
                </>
              ),
            },
            { header: 'Current version', numeric: true, cell: (p) => <CurrentVersion slug={p.slug} /> },
            { header: 'Updated', cell: (p) => new Date(p.updated_at).toLocaleString() },
            {
              header: 'Actions',
              cell: (p) => (
                <RowActions
                  name={p.slug}
                  confirm={`Delete “${p.slug}” and its versions`}
                  busy={remove.isPending}
                  onDelete={(done) => {
                    // Its detail would only find it gone.
                    if (open === p.slug) setOpen(null);
                    remove.mutate(p.slug, { onSettled: done });
                  }}
                >
                  <button type="button" onClick={() => setOpen(p.slug)} aria-label={`Open ${p.slug}`}>
                    Open
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

/** The list does not carry version numbers: each row reads its preset (cached, shared with the detail). */
function CurrentVersion({ slug }: { slug: string }) {
  const preset = usePreset(slug);
  if (preset.error) return <>?</>;
  if (!preset.data) return <>…</>;
  return <>{preset.data.data.designated_version?.version ?? '—'}</>;
}
