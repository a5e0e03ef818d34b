import './pages.css';
import { useId } from 'react';

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
