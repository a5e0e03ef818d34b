import { SelectField } from './field';

export const TIME_RANGES = {
  '1h': { label: 'Last hour', seconds: 3600 },
  '24h': { label: 'Last 24 hours', seconds: 86_400 },
  '7d': { label: 'Last 7 days', seconds: 7 * 86_400 },
  '30d': { label: 'Last 30 days', seconds: 30 * 86_400 },
} as const;
export type TimeRange = keyof typeof TIME_RANGES;

/** The [from, to] instants (ISO 8601) a range covers, ending now. */
export function rangeBounds(range: TimeRange, now = Date.now()): { from: string; to: string } {
  return {
    from: new Date(now - TIME_RANGES[range].seconds * 1000).toISOString(),
    to: new Date(now).toISOString(),
  };
}

export function TimeRangePicker({ value, onChange }: { value: TimeRange; onChange: (r: TimeRange) => void }) {
  return (
    <SelectField
      label="Time range"
      value={value}
      onChange={(v) => onChange(v as TimeRange)}
      options={Object.entries(TIME_RANGES).map(([k, r]) => ({ value: k, label: r.label }))}
    />
  );
}
