import type uPlot from 'uplot';
import type { JsonOk } from '../../api/client';

export type Point = JsonOk<'/analytics/series', 'get'>['data'][number];
export type Metric = 'spend' | 'requests' | 'tokens' | 'errors' | 'latency';

const HOUR = 3600;
const DAY = 86_400;

/** Every bucket start (Unix seconds, UTC) from the one holding `from` up to `to`. */
export function bucketsOf(from: string, to: string, bucket: 'hour' | 'day'): number[] {
  const step = bucket === 'hour' ? HOUR : DAY;
  const first = Math.floor(Date.parse(from) / 1000 / step) * step;
  const end = Date.parse(to) / 1000;
  const out: number[] = [];
  for (let t = first; t < end; t += step) out.push(t);
  return out;
}

/** The groups of a grouped series, biggest spender first (then most requests). */
export function groupsOf(points: Point[]): string[] {
  const totals = new Map<string, { spend: number; requests: number }>();
  for (const p of points) {
    const g = p.group ?? '';
    const t = totals.get(g) ?? { spend: 0, requests: 0 };
    t.spend += p.spend;
    t.requests += p.requests;
    totals.set(g, t);
  }
  return [...totals.entries()]
    .sort(([, a], [, b]) => b.spend - a.spend || b.requests - a.requests)
    .map(([g]) => g);
}

const amountOf = (p: Point, metric: Exclude<Metric, 'latency'>): number => p[metric];

/**
 * uPlot's columns for one chart: the x buckets, then one column per line. Buckets without calls
 * are 0 for counts and sums, and gaps (null) for latency (no calls: no latency).
 */
export function columns(
  points: Point[],
  xs: number[],
  lines: { group: string | null; metric: Metric; percentile?: 'p50' | 'p95' }[],
): uPlot.AlignedData {
  const index = new Map(xs.map((x, i) => [x, i]));
  const cols = lines.map((line) => xs.map(() => (line.metric === 'latency' ? null : 0)) as (number | null)[]);
  for (const p of points) {
    const i = index.get(Math.floor(Date.parse(p.bucket) / 1000));
    if (i === undefined) continue;
    lines.forEach((line, l) => {
      if (line.group !== null && (p.group ?? '') !== line.group) return;
      const col = cols[l] as (number | null)[];
      if (line.metric === 'latency') {
        col[i] = line.percentile === 'p50' ? p.latency_p50_ms : p.latency_p95_ms;
      } else {
        col[i] = (col[i] ?? 0) + amountOf(p, line.metric);
      }
    });
  }
  return [xs, ...cols];
}

const PALETTE = ['#1f5fbf', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#a16207', '#4b5563'];
export const colorOf = (i: number) => PALETTE[i % PALETTE.length] as string;
