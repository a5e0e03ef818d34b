import type { FastifyRequest } from 'fastify';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import type { GenerationFilter } from './filter.js';
import { DIMENSIONS, GRANULARITIES, METRICS, parseQuery, sortRows, toRow } from './query.js';
import {
  ActivityQuery,
  ActivityResponse,
  GenerationPage,
  ListQuery,
  MetaResponse,
  QueryBody,
  QueryResponse,
  SeriesQuery,
  SeriesResponse,
} from './schemas.js';
import { instant } from './time-range.js';

const tags = ['Activity'];
const HOUR_MS = 3_600_000;

/** The list's filters as the store takes them (the organization and key scope come after). */
function listFilter(q: ListQuery): Omit<GenerationFilter, 'organizationId'> {
  return {
    workspaceId: q.workspace,
    keyHash: q.key,
    userId: q.user,
    model: q.model,
    provider: q.provider,
    status: q.status,
    streamed: q.streamed === undefined ? undefined : q.streamed === 'true',
    lane: q.lane,
    minCost: q.min_cost,
    maxCost: q.max_cost,
    from: q.from === undefined ? undefined : instant('from', q.from),
    to: q.to === undefined ? undefined : instant('to', q.to),
  };
}

/** Drops the filters left undefined, so spreading them never overwrites a set one. */
const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export async function activityRoutes(app: Router, { activity }: Pick<Services, 'activity'>) {
  app.get(
    '/generations',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        summary: 'List generations, newest first',
        description:
          'A management key lists every generation of its organization; an API key only the ones made with itself. ' +
          'Filters combine with AND. Pages follow next_cursor until it is null.',
        querystring: ListQuery,
        response: { 200: GenerationPage, ...errors(400, 401, 500) },
      },
    },
    async (req: FastifyRequest<{ Querystring: ListQuery }>) => {
      const q = req.query;
      const filter = activity.scope(req.caller, defined(listFilter(q)));
      return activity.list(filter, q.limit ?? 50, q.cursor);
    },
  );

  app.get(
    '/analytics/series',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Spend, requests, tokens, errors and latency over time',
        description:
          'One point per hour or day (and per model, provider or API key with group_by) that had requests. ' +
          'At most 744 buckets per query.',
        querystring: SeriesQuery,
        response: { 200: SeriesResponse, ...errors(400, 401, 403, 500) },
      },
    },
    async (req: FastifyRequest<{ Querystring: SeriesQuery }>) => {
      const q = req.query;
      const bucket = q.bucket ?? 'hour';
      const to = q.to === undefined ? new Date().toISOString() : instant('to', q.to);
      const span = bucket === 'hour' ? 24 * HOUR_MS : 30 * 24 * HOUR_MS;
      const from =
        q.from === undefined ? new Date(Date.parse(to) - span).toISOString() : instant('from', q.from);
      const filter = activity.scope(
        req.caller,
        defined({
          workspaceId: q.workspace,
          keyHash: q.key,
          userId: q.user,
          model: q.model,
          provider: q.provider,
        }),
      ) as GenerationFilter;
      const groupBy = q.group_by ? [q.group_by] : [];
      const points = await activity.series(filter, { bucket, groupBy, from, to });
      return {
        data: points.map(({ groups, byok_spend: _, ...p }) => ({
          ...p,
          bucket: p.bucket as string,
          group: groups[0] ?? null,
        })),
        bucket,
        group_by: q.group_by ?? null,
        from,
        to,
      };
    },
  );

  app.get(
    '/activity',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Usage by day, model and provider over the last 30 completed UTC days',
        querystring: ActivityQuery,
        response: { 200: ActivityResponse, ...errors(400, 401, 403, 500) },
      },
    },
    async (req: FastifyRequest<{ Querystring: ActivityQuery }>) => {
      const q = req.query;
      const filter = activity.scope(
        req.caller,
        defined({ workspaceId: q.workspace_id, keyHash: q.api_key_hash, userId: q.user_id }),
      ) as GenerationFilter;
      return { data: await activity.activity(filter, q.date, q.group_by === 'workspace') };
    },
  );

  app.post(
    '/analytics/query',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Query spend, requests, tokens, errors and latency by time and dimension',
        description:
          'OpenRouter’s analytics query: the metrics, dimensions and granularities GET /analytics/meta lists.',
        body: QueryBody,
        response: { 200: QueryResponse, ...errors(400, 401, 403, 500) },
      },
    },
    async (req: FastifyRequest<{ Body: QueryBody }>) => {
      const started = performance.now();
      const q = parseQuery(req.body);
      const filter = activity.scope(req.caller, defined(q.filter)) as GenerationFilter;
      const groupBy = q.dimensions.map((d) => DIMENSIONS[d]?.group).filter((g) => g !== undefined);
      const latency = q.metrics.some((m) => m === 'latency_p50_ms' || m === 'latency_p95_ms');
      const points = await activity.series(filter, {
        bucket: q.bucket,
        groupBy,
        from: q.from,
        to: q.to,
        latency,
      });
      const rows = sortRows(
        points.map((p) => toRow(p, q)),
        q,
      );
      return {
        data: {
          data: rows.slice(0, q.limit),
          metadata: {
            query_time_ms: Math.round(performance.now() - started),
            row_count: Math.min(rows.length, q.limit),
            truncated: rows.length > q.limit,
          },
        },
      };
    },
  );

  app.get(
    '/analytics/meta',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'What POST /analytics/query can measure, slice by and filter on',
        response: { 200: MetaResponse, ...errors(401, 403, 500) },
      },
    },
    async () => ({
      data: {
        dimensions: Object.entries(DIMENSIONS).map(([name, d]) => ({ name, display_label: d.label })),
        granularities: Object.entries(GRANULARITIES).map(([name, display_label]) => ({
          name,
          display_label,
        })),
        metrics: Object.entries(METRICS).map(([name, m]) => ({ name, ...m })),
        operators: [{ name: 'eq', value_type: 'scalar' }],
      },
    }),
  );
}
