import { badRequest } from '../lib/errors.js';
import type { Bucket, GroupBy } from './analytics.store.js';
import type { GenerationFilter } from './filter.js';
import type { SeriesPoint } from './service.js';
import { instant } from './time-range.js';

/** What POST /analytics/query can measure, slice by and filter on (GET /analytics/meta lists them). */
export const METRICS = {
  spend: { display_label: 'Spend', display_format: 'currency', is_rate: false },
  byok_spend: { display_label: 'BYOK spend', display_format: 'currency', is_rate: false },
  requests: { display_label: 'Requests', display_format: 'number', is_rate: false },
  errors: { display_label: 'Errors', display_format: 'number', is_rate: false },
  prompt_tokens: { display_label: 'Prompt tokens', display_format: 'number', is_rate: false },
  completion_tokens: { display_label: 'Completion tokens', display_format: 'number', is_rate: false },
  reasoning_tokens: { display_label: 'Reasoning tokens', display_format: 'number', is_rate: false },
  tokens: { display_label: 'Tokens', display_format: 'number', is_rate: false },
  latency_p50_ms: { display_label: 'Latency p50', display_format: 'latency', is_rate: false },
  latency_p95_ms: { display_label: 'Latency p95', display_format: 'latency', is_rate: false },
} as const;
type Metric = keyof typeof METRICS;

export const DIMENSIONS: Record<string, { label: string; group: GroupBy }> = {
  model: { label: 'Model', group: 'model' },
  provider: { label: 'Provider', group: 'provider' },
  api_key_hash: { label: 'API key', group: 'key' },
  workspace_id: { label: 'Workspace', group: 'workspace' },
};

/** Filterable fields, each an equality on one column of the list's filter. */
const FILTER_FIELDS: Record<string, keyof GenerationFilter> = {
  model: 'model',
  provider: 'provider',
  api_key_hash: 'keyHash',
  user_id: 'userId',
  workspace_id: 'workspaceId',
};

export const GRANULARITIES: Record<Bucket, string> = { hour: 'Hour', day: 'Day' };

export interface QueryBody {
  metrics: string[];
  dimensions?: string[];
  granularity?: string;
  time_range?: { start: string; end: string };
  filters?: { field: string; operator: string; value: unknown }[];
  limit?: number;
  order_by?: { field: string; direction: string };
}

export interface ParsedQuery {
  metrics: Metric[];
  dimensions: string[];
  bucket: Bucket | null;
  from: string;
  to: string;
  filter: Omit<GenerationFilter, 'organizationId'>;
  limit: number;
  orderBy: { field: string; desc: boolean } | null;
}

const DAY_MS = 86_400_000;

/** Checks a query against what meta advertises; every refusal names the part it refuses. */
export function parseQuery(b: QueryBody, now = new Date()): ParsedQuery {
  const metrics = b.metrics.map((m) => {
    if (!(m in METRICS)) throw badRequest(`Invalid metrics: unknown metric ${JSON.stringify(m)}`);
    return m as Metric;
  });
  if (metrics.length === 0) throw badRequest('Invalid metrics: name at least one metric');
  const dimensions = (b.dimensions ?? []).map((d) => {
    if (!DIMENSIONS[d]) throw badRequest(`Invalid dimensions: unknown dimension ${JSON.stringify(d)}`);
    return d;
  });
  let bucket: Bucket | null = null;
  if (b.granularity !== undefined) {
    if (b.granularity !== 'hour' && b.granularity !== 'day')
      throw badRequest('Invalid granularity: hour or day');
    bucket = b.granularity;
  }
  const to = b.time_range ? instant('time_range.end', b.time_range.end) : now.toISOString();
  const from = b.time_range
    ? instant('time_range.start', b.time_range.start)
    : new Date(Date.parse(to) - 30 * DAY_MS).toISOString();
  const filter: Record<string, string> = {};
  for (const f of b.filters ?? []) {
    const key = FILTER_FIELDS[f.field];
    if (!key) throw badRequest(`Invalid filters: unknown field ${JSON.stringify(f.field)}`);
    if (f.operator !== 'eq')
      throw badRequest(`Invalid filters: operator ${JSON.stringify(f.operator)} (only eq)`);
    if (typeof f.value !== 'string') throw badRequest(`Invalid filters: ${f.field} takes a string`);
    filter[key] = f.value;
  }
  let orderBy: ParsedQuery['orderBy'] = null;
  if (b.order_by) {
    if (!(b.order_by.field in METRICS) && !DIMENSIONS[b.order_by.field] && b.order_by.field !== 'bucket')
      throw badRequest(`Invalid order_by: unknown field ${JSON.stringify(b.order_by.field)}`);
    orderBy = { field: b.order_by.field, desc: b.order_by.direction === 'desc' };
  }
  return { metrics, dimensions, bucket, from, to, filter, limit: b.limit ?? 1000, orderBy };
}

/** A series point as a query row: the bucket, the asked dimensions, the asked metrics. */
export function toRow(p: SeriesPoint, q: ParsedQuery): Record<string, string | number | null> {
  const row: Record<string, string | number | null> = {};
  if (q.bucket) row.bucket = p.bucket;
  q.dimensions.forEach((d, i) => {
    row[d] = p.groups[i] ?? null;
  });
  for (const m of q.metrics) row[m] = p[m];
  return row;
}

export function sortRows(rows: Record<string, string | number | null>[], q: ParsedQuery) {
  const o = q.orderBy;
  if (!o) return rows;
  const cmp = (a: string | number | null, b: string | number | null) =>
    a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1;
  return rows.sort((a, b) => (o.desc ? -1 : 1) * cmp(a[o.field] ?? null, b[o.field] ?? null));
}
