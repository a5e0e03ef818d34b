import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { call, dataApi } from '../../api/client';
import { CopyButton } from '../../components/copy-button';
import { ErrorBanner } from '../../components/error-banner';
import { Table } from '../../components/table';
import type { Version } from './body';
import { SaveVersion } from './forms';

export const PRESETS = ['data', 'presets'] as const;
const when = (iso: string) => new Date(iso).toLocaleString();
const pretty = (config: unknown) => JSON.stringify(config, null, 2);

/** A preset with its current version (shared by the list's version column and the detail). */
export function usePreset(slug: string) {
  return useQuery({
    queryKey: [...PRESETS, 'one', slug],
    queryFn: () => call(dataApi.GET('/presets/{slug}', { params: { path: { slug } } })),
  });
}

/** One preset: its current configuration, how to call it, its versions, and a new version's editor. */
export function PresetDetail({
  slug,
  onClose,
  onSaved,
}: {
  slug: string;
  onClose: () => void;
  onSaved: () => void;
}) {
  const preset = usePreset(slug);
  const versions = useQuery({
    queryKey: [...PRESETS, 'versions', slug],
    // The gateway keeps a preset's newest 100 versions: one page holds them all.
    queryFn: () =>
      call(dataApi.GET('/presets/{slug}/versions', { params: { path: { slug }, query: { limit: 100 } } })),
  });
  const [saved, setSaved] = useState<number | null>(null);
  const p = preset.data?.data;
  const current = p?.designated_version ?? null;
  const snippet = `"model": "@preset/${slug}"`;

  return (
    <section aria-labelledby="preset-detail" className="panel">
      <div className="page-head">
        <h2 id="preset-detail">
          Preset <code>{slug}</code>
        </h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorBanner error={preset.error ?? versions.error} />
      {saved !== null && (
        <div className="banner banner-ok" role="status">
          Version {saved} saved; calls naming the preset use it now.
        </div>
      )}
      {p && (
        <>
          <dl className="facts">
            <div>
              <dt>Current version</dt>
              <dd data-testid="preset-version">{current?.version ?? '—'}</dd>
            </div>
            <div>
              <dt>Versions kept</dt>
              <dd data-testid="preset-version-count">{versions.data?.total_count ?? '…'}</dd>
            </div>
            <div>
              <dt>Status</dt>
              <dd>{p.status}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{when(p.created_at)}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{when(p.updated_at)}</dd>
            </div>
          </dl>
          <h3>How to call it</h3>
          <p>
            Name it as the model of a chat completions, messages or responses call (
            <code>{`"model": "<model>@preset/${slug}"`}</code> keeps your own model):
          </p>
          <pre data-testid="preset-snippet">{snippet}</pre>
          <CopyButton text={snippet} label="Copy snippet" />
          <h3>Current configuration</h3>
          {current ? (
            <>
              <pre data-testid="preset-config">{pretty(current.config)}</pre>
              <h4>System prompt</h4>
              {current.system_prompt === null ? (
                <p className="hint">None.</p>
              ) : (
                <pre data-testid="preset-system-prompt">{current.system_prompt}</pre>
              )}
            </>
          ) : (
            <p className="hint">No version yet.</p>
          )}
          <Versions rows={versions.data?.data ?? []} loading={versions.isPending} />
          <SaveVersion
            key={current?.id ?? 'none'}
            slug={slug}
            current={current}
            onSaved={(v) => {
              setSaved(v ?? null);
              onSaved();
            }}
          />
        </>
      )}
    </section>
  );
}

function Versions({ rows, loading }: { rows: Version[]; loading: boolean }) {
  return (
    <>
      <h3>Versions</h3>
      {loading ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Versions, oldest first (the newest is the one calls use)"
          rows={rows}
          rowKey={(v) => v.id}
          empty="No versions."
          columns={[
            { header: 'Version', numeric: true, cell: (v) => v.version },
            { header: 'Saved', cell: (v) => when(v.created_at) },
            {
              header: 'Model',
              cell: (v) => {
                const model = (v.config as { model?: unknown }).model;
                return typeof model === 'string' ? <code>{model}</code> : '—';
              },
            },
            {
              header: 'Configuration',
              cell: (v) => (
                <details>
                  <summary>Version {v.version}</summary>
                  <pre>{pretty(v.config)}</pre>
                  {v.system_prompt !== null && <pre>{v.system_prompt}</pre>}
                </details>
              ),
            },
          ]}
        />
      )}
    </>
  );
}
