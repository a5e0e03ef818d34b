import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api/client';
import { SelectField } from './field';

export const WORKSPACES = ['workspaces'] as const;
export const fetchWorkspaces = () => call(api.GET('/workspaces', { params: { query: { limit: 100 } } }));

/**
 * Picks one of the organization's workspaces. `''` is the default workspace (the API's own default
 * when a workspace is omitted) or, with `all`, every workspace of the organization.
 */
export function WorkspacePicker({
  value,
  onChange,
  all = false,
}: {
  value: string;
  onChange: (id: string) => void;
  all?: boolean;
}) {
  const workspaces = useQuery({ queryKey: WORKSPACES, queryFn: fetchWorkspaces });
  const options = (workspaces.data?.data ?? []).map((w) => ({
    value: w.is_default && !all ? '' : w.id,
    label: w.is_default ? `${w.name} (default)` : w.name,
  }));
  if (all) options.unshift({ value: '', label: 'All workspaces' });
  else if (!options.some((o) => o.value === '')) options.unshift({ value: '', label: 'Default workspace' });
  // A linked workspace that is not (or not yet) listed stays selectable, so the select shows it.
  if (!options.some((o) => o.value === value)) options.push({ value, label: value });
  return (
    <SelectField label="Workspace" name="workspace" value={value} onChange={onChange} options={options} />
  );
}
