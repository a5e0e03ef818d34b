import { type UseQueryResult, useQueries, useQuery } from '@tanstack/react-query';
import { api, call, type JsonOk } from '../../api/client';
import { fetchWorkspaces, WORKSPACES } from '../../components/workspace-picker';

type KeyPage = JsonOk<'/keys', 'get'>;
export type ApiKey = KeyPage['data'][number];

// Module-level so TanStack Query keeps the combined list while no query changes.
const allKeys = (results: UseQueryResult<KeyPage>[]) => results.flatMap((r) => r.data?.data ?? []);

/**
 * The API keys of one workspace, or of every workspace of the organization (`''`): the Activity and
 * Overview pages name keys with them (calls of any workspace, not just the default one's).
 */
export function useWorkspaceKeys(workspace: string, enabled = true): ApiKey[] {
  const workspaces = useQuery({
    queryKey: WORKSPACES,
    queryFn: fetchWorkspaces,
    enabled: enabled && !workspace,
  });
  const ids = workspace ? [workspace] : (workspaces.data?.data ?? []).map((w) => w.id);
  return useQueries({
    queries: ids.map((id) => ({
      queryKey: ['keys', 'names', id],
      queryFn: () =>
        call(api.GET('/keys', { params: { query: { include_disabled: true, workspace_id: id } } })),
      enabled,
    })),
    combine: allKeys,
  });
}
