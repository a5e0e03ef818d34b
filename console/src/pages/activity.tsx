import { useInfiniteQuery } from '@tanstack/react-query';
import { useCallback, useMemo, useState } from 'react';
import { useSearchParams } from 'wouter';
import { api, call } from '../api/client';
import { detailsColumn } from '../components/details-toggle';
import { ErrorBanner } from '../components/error-banner';
import { LoadMore } from '../components/load-more';
import { Page } from '../components/page';
import { Table } from '../components/table';
import { WorkspacePicker } from '../components/workspace-picker';
import { useWorkspaceParam } from '../lib/use-workspace';
import { GenerationDetail, usd } from './activity/detail';
import { Filters, type ListQuery } from './activity/filters';
import { useWorkspaceKeys } from './activity/workspace-keys';

const PAGE_SIZE = 50;

/** Every call through the gateway, newest first: by workspace, filters, "load more", and one call's detail. */
export function ActivityPage() {
  const [filter, setFilter] = useState<ListQuery>({});
  // The workspace (?workspace=) and the open generation (?id=) are in the address, so a view and a
  // call's detail can be bookmarked or shared.
  const [workspace, setWorkspace] = useWorkspaceParam();
  const [search, setSearch] = useSearchParams();
  const open = search.get('id');
  const setOpen = useCallback(
    (id: string | null) =>
      setSearch(
        (old) => {
          const next = new URLSearchParams(old);
          if (id) next.set('id', id);
          else next.delete('id');
          return next;
        },
        { replace: true },
      ),
    [setSearch],
  );

  const keys = useWorkspaceKeys(workspace);
  const keyNames = useMemo(() => new Map(keys.map((k) => [k.hash, k.name])), [keys]);
  const keyName = useCallback(
    (hash: string | null) => (hash === null ? '—' : (keyNames.get(hash) ?? `${hash.slice(0, 10)}…`)),
    [keyNames],
  );

  const list = useInfiniteQuery({
    queryKey: ['generations', filter, workspace],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      call(
        api.GET('/generations', {
          params: {
            query: {
              ...filter,
              ...(workspace ? { workspace } : {}),
              limit: PAGE_SIZE,
              ...(pageParam ? { cursor: pageParam } : {}),
            },
          },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = useMemo(() => list.data?.pages.flatMap((p) => p.data) ?? [], [list.data]);

  return (
    <Page title="Activity">
      <div className="toolbar">
        <WorkspacePicker all value={workspace} onChange={(w) => setWorkspace(w, ['id'])} />
      </div>
      <Filters
        keys={keys}
        onApply={(q) => {
          setFilter(q);
          setOpen(null);
        }}
      />
      <ErrorBanner error={list.error} />
      {open && <GenerationDetail id={open} keyName={keyName} onClose={() => setOpen(null)} />}
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <>
          <Table
            caption={`Generations, newest first (${rows.length} shown${list.hasNextPage ? ', more below' : ''})`}
            rows={rows}
            rowKey={(g) => g.id}
            empty="No generations match these filters."
            columns={[
              { header: 'Time', cell: (g) => new Date(g.created_at).toLocaleString() },
              { header: 'Model', cell: (g) => g.model },
              { header: 'Provider', cell: (g) => g.provider_name ?? '—' },
              {
                header: 'Status',
                cell: (g) => (g.status === 'success' ? 'success' : `${g.status} (${g.http_status})`),
              },
              {
                header: 'Tokens in / out',
                numeric: true,
                cell: (g) => `${g.tokens_prompt} / ${g.tokens_completion}`,
              },
              { header: 'Cost', numeric: true, cell: (g) => usd(g.total_cost) },
              { header: 'Latency', numeric: true, cell: (g) => `${g.latency} ms` },
              { header: 'Streamed', cell: (g) => (g.streamed ? 'yes' : 'no') },
              { header: 'Lane', cell: (g) => (g.passthrough ? 'passed through' : 'translated') },
              { header: 'Key', cell: (g) => keyName(g.api_key_hash) },
              detailsColumn<(typeof rows)[number]>({
                idOf: (g) => g.id,
                label: (g) => `Details of ${g.model} at ${new Date(g.created_at).toLocaleString()}`,
                open,
                setOpen,
              }),
            ]}
          />
          <LoadMore list={list} />
        </>
      )}
    </Page>
  );
}
