import type { Caller } from '../accounts/caller.js';
import type { Db, Dialect } from '../db/connection.js';
import { badRequest } from '../lib/errors.js';
import { generationView } from '../routing/generations.js';
import { type Bucket, cellKey, type GroupBy, latencies, totals } from './analytics.store.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { GenerationFilter } from './filter.js';
import { listGenerations } from './list.store.js';

const DAY_MS = 86_400_000;
/** A series holds at most this many buckets (hourly: 31 days). */
const MAX_BUCKETS = 744;

/** Nearest-rank percentile of sorted values; null for none. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

/** The bucket's start as an ISO time: `2026-11-26T13` → `2026-11-26T13:00:00.000Z`. */
const bucketStart = (b: string) => (b.length === 13 ? `${b}:00:00.000Z` : `${b}T00:00:00.000Z`);

export interface SeriesQuery {
  bucket: Bucket | null;
  groupBy: GroupBy[];
  from: string;
  to: string;
}

export interface SeriesPoint {
  bucket: string | null;
  groups: (string | null)[];
  spend: number;
  byok_spend: number;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  tokens: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}

/** Lists and aggregates an organization's generations (the console's activity pages, /activity). */
export class ActivityService {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {}

  /**
   * The scope a caller reads: a management key its whole organization; an API key only the
   * generations made with itself (another key's never, whatever the filter asks).
   */
  scope(caller: Caller, filter: Omit<GenerationFilter, 'organizationId'>): GenerationFilter | null {
    if (caller.isManagement) return { ...filter, organizationId: caller.organizationId };
    if (filter.keyHash !== undefined && filter.keyHash !== caller.keyHash) return null;
    return { ...filter, organizationId: caller.organizationId, keyHash: caller.keyHash };
  }

  /** A page of the caller's generations (`filter` null: a scope that holds none). */
  async list(filter: GenerationFilter | null, limit: number, cursor: string | undefined) {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    if (filter === null) return { data: [], next_cursor: null };
    // One row more than asked says whether another page exists.
    const rows = await listGenerations(this.db, this.dialect, filter, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(generationView),
      next_cursor:
        rows.length > limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
    };
  }

  /** Spend, requests, tokens, errors and latency percentiles per bucket and group, bucket order. */
  async series(filter: GenerationFilter, q: SeriesQuery): Promise<SeriesPoint[]> {
    if (q.from >= q.to) throw badRequest('Invalid time range: from must be before to');
    const span = Date.parse(q.to) - Date.parse(q.from);
    if (q.bucket && span / (q.bucket === 'hour' ? DAY_MS / 24 : DAY_MS) > MAX_BUCKETS)
      throw badRequest(`Invalid time range: at most ${MAX_BUCKETS} buckets (${q.bucket}) per series`);
    const f = { ...filter, from: q.from, to: q.to };
    // PostgreSQL computes percentiles with the sums; SQLite has no percentile function, so its
    // latencies are read as values (a second pass over the range).
    const inDb = this.dialect === 'postgres';
    const [sums, lat] = await Promise.all([
      totals(this.db, f, q.bucket, q.groupBy, inDb),
      inDb ? null : latencies(this.db, f, q.bucket, q.groupBy),
    ]);
    const points = sums.map(({ p50, p95, ...s }): SeriesPoint => {
      const l = lat ? (lat.get(cellKey(s.bucket, s.groups)) ?? []).sort((a, b) => a - b) : [];
      return {
        ...s,
        bucket: s.bucket === null ? null : bucketStart(s.bucket),
        tokens: s.prompt_tokens + s.completion_tokens,
        latency_p50_ms: lat ? percentile(l, 0.5) : (p50 ?? null),
        latency_p95_ms: lat ? percentile(l, 0.95) : (p95 ?? null),
      };
    });
    return points.sort(
      (a, b) =>
        (a.bucket ?? '').localeCompare(b.bucket ?? '') ||
        JSON.stringify(a.groups).localeCompare(JSON.stringify(b.groups)),
    );
  }

  /**
   * OpenRouter's GET /activity: the last 30 completed UTC days (or one of them), by day, model and
   * provider (and workspace when asked), newest day first.
   */
  async activity(filter: GenerationFilter, date: string | undefined, byWorkspace: boolean, now = new Date()) {
    const today = new Date(now.toISOString().slice(0, 10)).getTime();
    let from = new Date(today - 30 * DAY_MS).toISOString();
    let to = new Date(today).toISOString();
    if (date !== undefined) {
      const d = /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00.000Z`) : Number.NaN;
      if (Number.isNaN(d) || d < Date.parse(from) || d >= today)
        throw badRequest('Invalid date: give one of the last 30 completed UTC days as YYYY-MM-DD');
      from = new Date(d).toISOString();
      to = new Date(d + DAY_MS).toISOString();
    }
    const groupBy: GroupBy[] = byWorkspace ? ['model', 'provider', 'workspace'] : ['model', 'provider'];
    const rows = await totals(this.db, { ...filter, from, to }, 'day', groupBy);
    return rows
      .map((r) => {
        const [model, provider, workspace] = r.groups;
        const provider_name = provider ?? 'unknown';
        const m = model ?? 'unknown';
        return {
          date: r.bucket as string,
          model: m,
          model_permaslug: m,
          endpoint_id: `${provider_name}/${m}`,
          provider_name,
          usage: r.spend,
          byok_usage_inference: r.byok_spend,
          requests: r.requests,
          prompt_tokens: r.prompt_tokens,
          completion_tokens: r.completion_tokens,
          reasoning_tokens: r.reasoning_tokens,
          ...(byWorkspace ? { workspace_id: workspace ?? '' } : {}),
        };
      })
      .sort(
        (a, b) =>
          b.date.localeCompare(a.date) || b.usage - a.usage || a.endpoint_id.localeCompare(b.endpoint_id),
      );
  }
}
