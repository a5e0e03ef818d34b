import { useQuery } from '@tanstack/react-query';
import './pages.css';
import { useId } from 'react';
import { api, call } from '../../api/client';
import { SelectField } from '../../components/field';

/** A labelled checkbox. */
export function CheckField(props: {
  label: string;
  checked: boolean;
  onChange: (v: boolean) => void;
  disabled?: boolean;
}) {
  const id = useId();
  return (
    <div className="field field-check">
      <input
        id={id}
        type="checkbox"
        checked={props.checked}
        onChange={(e) => props.onChange(e.target.checked)}
      />
      <label htmlFor={id}>{props.label}</label>
    </div>
  );
}

/** "a, b\nc" → ['a', 'b', 'c']; empty → null (no list). */
export function parseList(text: string): string[] | null {
  const items = text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : null;
}

export const listText = (list: readonly string[] | null | undefined) => (list ?? []).join(', ');

/** '' → null, else the number typed. */
export const numberOrNull = (s: string) => (s.trim() === '' ? null : Number(s));
export const numberText = (n: number | null | undefined) => (n === null || n === undefined ? '' : String(n));

export const usd = (n: number) => `$${n.toFixed(n !== 0 && n < 0.01 ? 4 : 2)}`;

export const WORKSPACES = ['workspaces'] as const;
export const fetchWorkspaces = () => call(api.GET('/workspaces', { params: { query: { limit: 100 } } }));

/** Picks one of the organization's workspaces ('' = the default workspace). */
export function WorkspacePicker({ value, onChange }: { value: string; onChange: (id: string) => void }) {
  const workspaces = useQuery({ queryKey: WORKSPACES, queryFn: fetchWorkspaces });
  const options = (workspaces.data?.data ?? []).map((w) => ({
    value: w.is_default ? '' : w.id,
    label: w.is_default ? `${w.name} (default)` : w.name,
  }));
  if (!options.some((o) => o.value === '')) options.unshift({ value: '', label: 'Default workspace' });
  return (
    <SelectField label="Workspace" name="workspace" value={value} onChange={onChange} options={options} />
  );
}
