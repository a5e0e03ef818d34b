import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { call, dataApi, type JsonOk } from '../api/client';
import { ApiKeyGate } from '../components/api-key-gate';
import { CopyButton } from '../components/copy-button';
import { ErrorBanner } from '../components/error-banner';
import { SelectField } from '../components/field';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { useResource } from '../lib/use-resource';

type FileList = {
  data: { id: string; filename: string; bytes: number; purpose: string; created_at: number }[];
};
type Uploaded = JsonOk<'/files/{id}', 'get'>;
const FILES = ['data', 'files'] as const;

const PURPOSES = [
  { value: 'user_data', label: 'user_data (documents for models)' },
  { value: 'vision', label: 'vision (images)' },
  { value: 'assistants', label: 'assistants' },
];

const size = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 ** 2
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

/**
 * The workspace's uploaded files (of the session's API key): documents and images models read,
 * named by id in a call, and batch files. Upload, copy an id, download, delete.
 */
export function FilesPage() {
  return (
    <Page title="Files">
      <ApiKeyGate>
        <Files />
      </ApiKeyGate>
    </Page>
  );
}

function Files() {
  const files = useResource({
    queryKey: FILES,
    list: async () => (await call(dataApi.GET('/files', { params: { query: {} } }))) as unknown as FileList,
    remove: (id) => call(dataApi.DELETE('/files/{id}', { params: { path: { id } } })),
  });
  const { list, remove, invalidate } = files;
  return (
    <>
      <ErrorBanner error={list.error} />
      <ErrorBanner error={remove.error} onDismiss={() => remove.reset()} />
      <Upload onDone={invalidate} />
      <h2>Files of the workspace</h2>
      <p className="hint">
        Name a file in a call by its id: <code>{'{"type": "file", "file": {"file_id": …}}'}</code> in chat,{' '}
        <code>input_file</code> in responses, a <code>document</code> source in messages.
      </p>
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Uploaded files, newest first"
          rows={list.data?.data ?? []}
          rowKey={(f) => f.id}
          empty="No files yet."
          columns={[
            { header: 'Name', cell: (f) => f.filename },
            {
              header: 'Id',
              cell: (f) => (
                <>
                  <code>{f.id}</code> <CopyButton text={f.id} label={`Copy the id of ${f.filename}`} />
                </>
              ),
            },
            { header: 'Purpose', cell: (f) => f.purpose },
            { header: 'Size', cell: (f) => size(f.bytes) },
            { header: 'Uploaded', cell: (f) => new Date(f.created_at * 1000).toLocaleString() },
            {
              header: 'Actions',
              cell: (f) => (
                <RowActions
                  name={f.filename}
                  confirm={`Delete “${f.filename}”`}
                  busy={remove.isPending}
                  deletable={f.purpose !== 'batch_output'}
                  onDelete={(done) => remove.mutate(f.id, { onSettled: done })}
                />
              ),
            },
          ]}
        />
      )}
    </>
  );
}

function Upload({ onDone }: { onDone: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [purpose, setPurpose] = useState('user_data');
  const upload = useMutation({
    mutationFn: (f: File) => {
      const form = new FormData();
      form.append('purpose', purpose);
      form.append('file', f, f.name);
      return call(
        dataApi.POST('/files', { body: {} as never, bodySerializer: () => form }),
      ) as unknown as Promise<Uploaded>;
    },
    onSuccess: () => {
      setFile(null);
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (file) upload.mutate(file);
  };
  return (
    <section aria-labelledby="upload-file">
      <h2 id="upload-file">Upload a file</h2>
      <ErrorBanner error={upload.error} onDismiss={() => upload.reset()} />
      <form className="form-row" onSubmit={submit} aria-label="Upload a file">
        <div className="field">
          <label htmlFor="file-input">File</label>
          <input id="file-input" type="file" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
        </div>
        <SelectField
          label="Purpose"
          name="purpose"
          value={purpose}
          onChange={setPurpose}
          options={PURPOSES}
        />
        <span className="actions">
          <button type="submit" disabled={!file || upload.isPending}>
            {upload.isPending ? 'Uploading…' : 'Upload'}
          </button>
        </span>
      </form>
      {upload.data && (
        <p role="status">
          Uploaded “{upload.data.filename}”: <code data-testid="uploaded-id">{upload.data.id}</code>
        </p>
      )}
    </section>
  );
}
