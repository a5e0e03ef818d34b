import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { call, dataApi } from '../api/client';
import { ApiKeyGate } from '../components/api-key-gate';
import { ErrorBanner } from '../components/error-banner';
import { SelectField } from '../components/field';
import { Page } from '../components/page';
import { Table } from '../components/table';
import { type Batch, ENDPOINTS, type Endpoint, requestLines, submitBatch } from './batches/upload';

const BATCHES = ['data', 'batches'] as const;
const FINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);
const RESULTS_PAGE = 50;
const when = (unix: number | null) => (unix ? new Date(unix * 1000).toLocaleString() : '—');
const usd = (n: number) => `$${n.toFixed(n !== 0 && n < 0.01 ? 6 : 4)}`;

/** Batches of the session's API key: upload a JSONL file, follow progress, read errors, download, cancel. */
export function BatchesPage() {
  return (
    <Page title="Batches">
      <ApiKeyGate>
        <Batches />
      </ApiKeyGate>
    </Page>
  );
}

function Batches() {
  const client = useQueryClient();
  const [open, setOpen] = useState<string | null>(null);
  const batches = useQuery({
    queryKey: BATCHES,
    queryFn: () => call(dataApi.GET('/batches', { params: { query: { limit: 100 } } })),
    // Refreshed while any batch is still running.
    refetchInterval: (q) => (q.state.data?.data.some((b) => !FINAL.has(b.status)) ? 2000 : false),
  });
  const invalidate = () => client.invalidateQueries({ queryKey: BATCHES });

  return (
    <>
      <ErrorBanner error={batches.error} />
      <Upload
        onCreated={(b) => {
          setOpen(b.id);
          void invalidate();
        }}
      />
      {open && <BatchDetail id={open} onClose={() => setOpen(null)} onChanged={invalidate} />}
      <h2>Batches of this key</h2>
      {batches.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Batches, newest first"
          rows={batches.data?.data ?? []}
          rowKey={(b) => b.id}
          empty="No batches yet."
          columns={[
            { header: 'Batch', cell: (b) => <code>{b.id}</code> },
            // A batch whose requests name several models has none of its own.
            { header: 'Model', cell: (b) => b.model ?? 'several' },
            { header: 'Endpoint', cell: (b) => b.endpoint },
            { header: 'Status', cell: (b) => <span data-status={b.status}>{b.status}</span> },
            {
              header: 'Done / failed / total',
              numeric: true,
              cell: (b) =>
                `${b.request_counts.completed} / ${b.request_counts.failed} / ${b.request_counts.total}`,
            },
            { header: 'Cost', numeric: true, cell: (b) => usd(b.usage.cost) },
            { header: 'Created', cell: (b) => when(b.created_at) },
            {
              header: 'Actions',
              cell: (b) => (
                <button type="button" onClick={() => setOpen(b.id)} aria-label={`Open batch ${b.id}`}>
                  Open
                </button>
              ),
            },
          ]}
        />
      )}
    </>
  );
}

function Upload({ onCreated }: { onCreated: (b: Batch) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [endpoint, setEndpoint] = useState<'' | Endpoint>('');
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [uploading, setUploading] = useState<AbortController | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  useEffect(() => () => uploading?.abort(), [uploading]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    setError(null);
    const controller = new AbortController();
    try {
      const { lines, endpoint: fromFile } = requestLines(await file.text());
      setUploading(controller);
      setProgress(0);
      const batch = await submitBatch(
        endpoint || fromFile || '/v1/chat/completions',
        lines,
        setProgress,
        controller.signal,
      );
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
      onCreated(batch);
    } catch (err) {
      setError(err);
      setProgress(null);
    } finally {
      setUploading(null);
    }
  };
  const percent = progress === null ? null : Math.round(progress * 100);
  return (
    <section aria-labelledby="upload">
      <h2 id="upload">Submit a batch</h2>
      <p className="hint">
        A JSON Lines file: one request per line,{' '}
        <code>{'{"custom_id": "q1", "body": {"model": …, "messages": […]}}'}</code> (OpenAI's batch files,
        with <code>method</code> and <code>url</code>, work as they are). Requests may name different models
        (up to 64); results arrive within 24 hours.
      </p>
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      <form className="form-row" onSubmit={submit}>
        <div className="field">
          <label htmlFor="batch-file">JSONL file</label>
          <input
            id="batch-file"
            ref={fileInput}
            name="file"
            type="file"
            accept=".jsonl,.json,.txt,application/jsonl,application/x-ndjson"
            required
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          />
        </div>
        <SelectField
          label="Endpoint"
          name="endpoint"
          value={endpoint}
          onChange={(v) => setEndpoint(v as '' | Endpoint)}
          options={[
            { value: '', label: "From the file's url (else chat completions)" },
            ...ENDPOINTS.map((e) => ({ value: e, label: e })),
          ]}
        />
        <button type="submit" disabled={!file || !!uploading}>
          {uploading ? 'Uploading…' : 'Upload and submit'}
        </button>
        {uploading && (
          <button type="button" onClick={() => uploading.abort()}>
            Cancel upload
          </button>
        )}
      </form>
      {percent !== null && (
        <p className="progress-line">
          <label htmlFor="upload-progress">Upload</label>{' '}
          <progress id="upload-progress" max={100} value={percent}>
            {percent} %
          </progress>{' '}
          <output htmlFor="upload-progress" data-testid="upload-percent">
            {percent} %
          </output>
        </p>
      )}
    </section>
  );
}

function BatchDetail({ id, onClose, onChanged }: { id: string; onClose: () => void; onChanged: () => void }) {
  const [offset, setOffset] = useState(0);
  const batch = useQuery({
    queryKey: [...BATCHES, id, offset],
    queryFn: () =>
      call(
        dataApi.GET('/batches/{id}', {
          params: { path: { id }, query: { results_offset: offset, results_limit: RESULTS_PAGE } },
        }),
      ),
    refetchInterval: (q) => (q.state.data && FINAL.has(q.state.data.status) ? false : 1000),
  });
  const b = batch.data;
  const final = b ? FINAL.has(b.status) : false;
  useEffect(() => {
    if (final) onChanged();
  }, [final, onChanged]);
  const cancel = useMutation({
    mutationFn: () => call(dataApi.POST('/batches/{id}/cancel', { params: { path: { id } } })),
    onSuccess: () => {
      void batch.refetch();
      onChanged();
    },
  });
  const download = useMutation({
    mutationFn: async () => {
      const blob = await call(
        dataApi.GET('/batches/{id}/results', { params: { path: { id } }, parseAs: 'blob' }),
      );
      const url = URL.createObjectURL(blob as Blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${id}_results.jsonl`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    },
  });

  return (
    <section aria-labelledby="batch-detail" className="panel">
      <div className="page-head">
        <h2 id="batch-detail">
          Batch <code>{id}</code>
        </h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorBanner error={batch.error} />
      <ErrorBanner
        error={cancel.error ?? download.error}
        onDismiss={() => {
          cancel.reset();
          download.reset();
        }}
      />
      {b && (
        <>
          <dl className="facts">
            <div>
              <dt>Status</dt>
              <dd data-testid="batch-status">{b.status}</dd>
            </div>
            <div>
              <dt>Requests</dt>
              <dd>
                {b.request_counts.completed} completed, {b.request_counts.failed} failed of{' '}
                {b.request_counts.total}
              </dd>
            </div>
            <div>
              <dt>Tokens</dt>
              <dd>
                {b.usage.prompt_tokens} in, {b.usage.completion_tokens} out
              </dd>
            </div>
            <div>
              <dt>Cost</dt>
              <dd>{usd(b.usage.cost)}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{when(b.created_at)}</dd>
            </div>
            <div>
              <dt>Finished</dt>
              <dd>{when(b.finalized_at)}</dd>
            </div>
            <div>
              <dt>Expires</dt>
              <dd>{when(b.expires_at)}</dd>
            </div>
          </dl>
          {b.error && (
            <p className="banner banner-error" role="alert">
              The batch failed: {b.error.message}
            </p>
          )}
          <p className="actions">
            <button type="button" onClick={() => download.mutate()} disabled={download.isPending}>
              Download results (JSONL)
            </button>
            {!final && b.status !== 'cancelling' && (
              <button
                type="button"
                className="danger"
                onClick={() => cancel.mutate()}
                disabled={cancel.isPending}
              >
                Cancel batch
              </button>
            )}
          </p>
          <Table
            caption="Results, in request order"
            rows={b.results ?? []}
            rowKey={(r) => r.id}
            empty={final ? 'No results.' : 'No request has finished yet.'}
            columns={[
              { header: 'Custom id', cell: (r) => <code>{r.custom_id}</code> },
              {
                header: 'Outcome',
                cell: (r) =>
                  r.error ? `error (${r.error.error_type})` : `ok (${r.response?.status_code ?? ''})`,
              },
              {
                header: 'Detail',
                cell: (r) => (r.error ? r.error.message : <code>{r.response?.request_id}</code>),
              },
            ]}
          />
          {b.results_page && b.results_page.total > RESULTS_PAGE && (
            <p className="actions">
              <button
                type="button"
                disabled={offset === 0}
                onClick={() => setOffset(Math.max(0, offset - RESULTS_PAGE))}
              >
                Previous results
              </button>
              <span>
                {offset + 1}–{Math.min(offset + RESULTS_PAGE, b.results_page.total)} of {b.results_page.total}
              </span>
              <button
                type="button"
                disabled={!b.results_page.has_more}
                onClick={() => setOffset(offset + RESULTS_PAGE)}
              >
                Next results
              </button>
            </p>
          )}
        </>
      )}
    </section>
  );
}
