import { type Static, Type } from '@sinclair/typebox';
import { FeedbackEntry } from '../feedback/schemas.js';
import { Nullable, StringEnum } from '../server/schemas.js';

const Str = Type.String();
const NStr = Nullable(Type.String());
const NNum = Nullable(Type.Number());
const NInt = Nullable(Type.Integer());

/** One generation as GET /generation and GET /generations show it (src/routing/generations.ts). */
export const GenerationView = Type.Object(
  {
    id: Str,
    created_at: Type.String({ description: 'ISO 8601, UTC' }),
    model: Str,
    requested_model: Str,
    provider_name: NStr,
    upstream_model: NStr,
    origin: Type.String({
      description: 'The endpoint that served the call: chat, messages, responses, embeddings, media',
    }),
    api_type: Nullable(StringEnum(['completions', 'embeddings', 'rerank', 'image', 'video'])),
    status: Type.String({ description: 'success, error or cancelled' }),
    http_status: Type.Integer(),
    streamed: Type.Boolean(),
    cancelled: Type.Boolean(),
    finish_reason: NStr,
    native_finish_reason: NStr,
    tokens_prompt: Type.Integer(),
    tokens_completion: Type.Integer(),
    native_tokens_prompt: Type.Integer(),
    native_tokens_completion: Type.Integer(),
    native_tokens_completion_images: NInt,
    native_tokens_reasoning: Type.Integer(),
    native_tokens_cached: Type.Integer(),
    native_tokens_cache_write: Type.Integer(),
    num_media_prompt: NInt,
    num_media_completion: NInt,
    num_input_audio_prompt: NInt,
    num_search_results: NInt,
    num_fetches: NInt,
    usage_estimated: Type.Boolean(),
    pricing_unknown: Type.Boolean(),
    total_cost: Type.Number({ description: 'USD' }),
    usage: Type.Number({ description: 'USD (same as total_cost)' }),
    cache_discount: NNum,
    upstream_inference_cost: NNum,
    cost_details: Type.Object({ prompt: Type.Number(), completion: Type.Number() }),
    is_byok: Type.Boolean(),
    attempts: Type.Integer(),
    latency: Type.Integer({ description: 'Milliseconds from request to the end of the answer' }),
    generation_time: Type.Integer({ description: 'Milliseconds the upstream took' }),
    moderation_latency: NInt,
    data_region: Str,
    service_tier: NStr,
    router: NStr,
    provider_responses: Nullable(
      Type.Array(Type.Object({}, { additionalProperties: true }), {
        description: 'Every attempt: the model and provider tried, the upstream status',
      }),
    ),
    upstream_id: NStr,
    app_id: NInt,
    preset_id: NStr,
    http_referer: NStr,
    user_agent: NStr,
    external_user: NStr,
    web_search_engine: NStr,
    api_key_hash: NStr,
    user_id: NStr,
    workspace_id: Str,
    error_message: NStr,
    passthrough: Type.Boolean(),
    web_search_requests: Type.Integer(),
  },
  { title: 'Generation' },
);

/** One check of a generation (src/guardrails/content-filters.ts `SafeguardRecord`): never the matched text. */
export const SafeguardRecord = Type.Object(
  {
    stage: StringEnum(['request', 'response'] as const, {
      description: "request: the caller's body, before it was sent; response: the model's answer",
    }),
    source: StringEnum(['gateway', 'provider'] as const, {
      description: "gateway: a guardrail's content filter; provider: the provider's own filter (Azure)",
    }),
    type: Type.Literal('content_filter'),
    label: Type.String({
      description: "The filter's name: a built-in detector's, or a custom filter's label",
    }),
    slug: Type.Optional(Type.String({ description: 'The built-in detector (or provider category)' })),
    action: StringEnum(['passed', 'redacted', 'flagged', 'blocked'] as const, {
      description: 'What it did: passed (nothing matched), redacted, flagged or blocked',
    }),
    matches: Type.Integer({ description: 'How many times it matched' }),
    guardrail_id: Type.Optional(Type.String({ description: 'The guardrail that brought the filter' })),
    guardrail_name: Type.Optional(
      Nullable(
        Type.String({
          description: "The guardrail's name as it is now (null: the guardrail was deleted since)",
        }),
      ),
    ),
  },
  { title: 'SafeguardRecord' },
);

/** GET /generation?id=: one generation, where its kept content is (null when none is kept), its feedback. */
export const GenerationDetail = Type.Object({
  data: Type.Object(
    {
      ...GenerationView.properties,
      content_url: Nullable(
        Type.String({
          description: 'GET this for the kept request and response content; null when none is kept',
        }),
      ),
      safeguards: Nullable(
        Type.Array(SafeguardRecord, {
          description:
            'Every content filter that ran on the call and what it did, request then answer (null: recorded before this was kept)',
        }),
      ),
      gateway_metadata: Nullable(
        Type.Object(
          {},
          {
            additionalProperties: true,
            description:
              'How the call was routed: lane or translated, endpoints considered and excluded, models tried and skipped (null: recorded before this was kept)',
          },
        ),
      ),
      feedback: Type.Array(FeedbackEntry, {
        description: 'The newest 20 entries of POST /generation/feedback on it, newest first ([] when none)',
      }),
    },
    { title: 'GenerationDetail' },
  ),
});

const Time = (what: string) =>
  Type.String({ minLength: 1, maxLength: 40, description: `${what}: ISO 8601 time or unix seconds` });
const Id = (description: string) => Type.String({ minLength: 1, maxLength: 200, description });

export const ListQuery = Type.Object({
  from: Type.Optional(Time('Earliest created_at, inclusive')),
  to: Type.Optional(Time('Latest created_at, exclusive')),
  key: Type.Optional(Id('API key hash (as the keys API shows it)')),
  user: Type.Optional(Id('User id of the key’s creator')),
  workspace: Type.Optional(Id('Workspace id')),
  model: Type.Optional(Id('Model id, e.g. openai/gpt-4o (the served model, else the requested one)')),
  provider: Type.Optional(Id('Provider slug')),
  status: Type.Optional(StringEnum(['success', 'error', 'cancelled'] as const)),
  streamed: Type.Optional(StringEnum(['true', 'false'] as const)),
  lane: Type.Optional(
    StringEnum(['passthrough', 'translated'] as const, {
      description: 'passthrough: the body went to a provider of its own format; translated: converted',
    }),
  ),
  min_cost: Type.Optional(Type.Number({ minimum: 0, description: 'USD, inclusive' })),
  max_cost: Type.Optional(Type.Number({ minimum: 0, description: 'USD, inclusive' })),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'Page size (1–200)' }),
  ),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1000, description: 'next_cursor of the previous page' }),
  ),
});
export type ListQuery = Static<typeof ListQuery>;

export const GenerationPage = Type.Object({
  data: Type.Array(GenerationView),
  next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last' })),
});

export const SeriesQuery = Type.Object({
  bucket: Type.Optional(StringEnum(['hour', 'day'] as const, { default: 'hour' })),
  group_by: Type.Optional(StringEnum(['model', 'provider', 'key'] as const)),
  from: Type.Optional(Time('Start (default: 24 hours, or 30 days for daily buckets, before to)')),
  to: Type.Optional(Time('End, exclusive (default: now)')),
  workspace: Type.Optional(Id('Workspace id')),
  key: Type.Optional(Id('API key hash')),
  user: Type.Optional(Id('User id')),
  model: Type.Optional(Id('Model id')),
  provider: Type.Optional(Id('Provider slug')),
});
export type SeriesQuery = Static<typeof SeriesQuery>;

const Metrics = {
  spend: Type.Number({ description: 'USD' }),
  requests: Type.Integer(),
  errors: Type.Integer({ description: 'Requests that did not succeed (errors and cancellations)' }),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  reasoning_tokens: Type.Integer(),
  tokens: Type.Integer({ description: 'prompt_tokens + completion_tokens' }),
  latency_p50_ms: Nullable(
    Type.Integer({
      description: 'Nearest-rank median latency, ms; from a latency histogram: within 9.1 % (+0.5 ms)',
    }),
  ),
  latency_p95_ms: Nullable(
    Type.Integer({
      description:
        'Nearest-rank 95th percentile latency, ms; from a latency histogram: within 9.1 % (+0.5 ms)',
    }),
  ),
};

export const SeriesResponse = Type.Object({
  data: Type.Array(
    Type.Object({
      bucket: Type.String({ description: 'Start of the hour or day, ISO 8601 UTC' }),
      group: NStr,
      ...Metrics,
    }),
  ),
  bucket: StringEnum(['hour', 'day'] as const),
  group_by: NStr,
  from: Str,
  to: Str,
});

export const ActivityQuery = Type.Object({
  date: Type.Optional(Type.String({ description: 'One UTC day of the last 30 completed ones, YYYY-MM-DD' })),
  api_key_hash: Type.Optional(Id('API key hash')),
  user_id: Type.Optional(Id('User id')),
  workspace_id: Type.Optional(Id('Workspace id')),
  group_by: Type.Optional(StringEnum(['workspace'] as const)),
});
export type ActivityQuery = Static<typeof ActivityQuery>;

export const ActivityResponse = Type.Object({
  data: Type.Array(
    Type.Object({
      date: Type.String({ description: 'YYYY-MM-DD (UTC)' }),
      model: Str,
      model_permaslug: Str,
      endpoint_id: Type.String({ description: 'provider/model' }),
      provider_name: Str,
      usage: Type.Number({ description: 'USD' }),
      byok_usage_inference: Type.Number({ description: 'USD spent on bring-your-own-key calls' }),
      requests: Type.Integer(),
      prompt_tokens: Type.Integer(),
      completion_tokens: Type.Integer(),
      reasoning_tokens: Type.Integer(),
      workspace_id: Type.Optional(Str),
    }),
  ),
});

const Scalar = Type.Union([Type.String(), Type.Number()]);

export const QueryBody = Type.Object({
  metrics: Type.Array(Type.String(), {
    minItems: 1,
    maxItems: 20,
    description: 'Names from GET /analytics/meta',
  }),
  dimensions: Type.Optional(Type.Array(Type.String(), { maxItems: 4 })),
  granularity: Type.Optional(Type.String({ description: 'hour or day; omitted: one total per group' })),
  time_range: Type.Optional(
    Type.Object({
      start: Type.String({ minLength: 1, maxLength: 40 }),
      end: Type.String({ minLength: 1, maxLength: 40 }),
    }),
  ),
  filters: Type.Optional(
    Type.Array(
      Type.Object({
        field: Type.String(),
        operator: Type.String(),
        value: Type.Union([Scalar, Type.Array(Scalar)]),
        include_unset: Type.Optional(Type.Boolean()),
      }),
      { maxItems: 20 },
    ),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, default: 1000 })),
  group_limit: Type.Optional(Type.Integer({ minimum: 1 })),
  order_by: Type.Optional(
    Type.Object({ field: Type.String(), direction: StringEnum(['asc', 'desc'] as const) }),
  ),
});
export type QueryBody = Static<typeof QueryBody>;

export const QueryResponse = Type.Object({
  data: Type.Object({
    data: Type.Array(
      Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Null()]), {
        description: 'bucket (with a granularity), the dimensions asked for, then the metrics asked for',
      }),
    ),
    metadata: Type.Object({
      query_time_ms: Type.Number(),
      row_count: Type.Integer(),
      truncated: Type.Boolean({ description: 'More rows matched than limit' }),
    }),
  }),
});

const Labeled = (name: TSchemaLike) => Type.Object({ name, display_label: Type.String() });
type TSchemaLike = ReturnType<typeof Type.String>;

export const MetaResponse = Type.Object({
  data: Type.Object({
    dimensions: Type.Array(Labeled(Type.String())),
    granularities: Type.Array(Labeled(Type.String())),
    metrics: Type.Array(
      Type.Object({
        name: Type.String(),
        display_label: Type.String(),
        display_format: Type.String({ description: 'number, currency or latency' }),
        is_rate: Type.Boolean(),
      }),
    ),
    operators: Type.Array(Type.Object({ name: Type.String(), value_type: Type.String() })),
  }),
});
