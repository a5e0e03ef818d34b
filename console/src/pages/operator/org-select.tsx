import { useQuery } from '@tanstack/react-query';
import { api, call } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { SelectField } from '../../components/field';

export const ORGS = ['admin', 'organizations'] as const;

/** The operator's organizations, for the pages that work on one. */
export function useOrganizations() {
  return useQuery({ queryKey: ORGS, queryFn: () => call(api.GET('/admin/organizations')) });
}

/**
 * Picks the organization an operator page works on. With none picked yet, the first (oldest) one
 * is shown — on most gateways the only one.
 */
export function OrganizationSelect({ value, onChange }: { value: string; onChange: (id: string) => void }) {
  const orgs = useOrganizations();
  const list = orgs.data?.data ?? [];
  return (
    <>
      <ErrorBanner error={orgs.error} />
      <SelectField
        label="Organization"
        name="organization"
        value={value || list[0]?.id || ''}
        onChange={onChange}
        options={list.map((o) => ({ value: o.id, label: `${o.name} (${o.id})` }))}
      />
    </>
  );
}

/** The organization id a page works on: the one picked, else the oldest. */
export function useOrganizationId(picked: string): string | undefined {
  const orgs = useOrganizations();
  return picked || orgs.data?.data[0]?.id;
}
