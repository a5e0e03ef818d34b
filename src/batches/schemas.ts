import { Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';
import { OpenAiBatchFields } from './openai-schemas.js';
import { MAX_RESULTS_PAGE } from './service.js';

/** Wire schemas of the batch routes (OpenAPI components; responses are serialized through them). */

const Int = Type.Integer();
const Num = Type.Number();
const Str = Type.String();
const counts = <K extends string>(...keys: K[]) =>
  Type.Object(Object.fromEntries(keys.map((k) => [k, Int])) as Record<K, typeof Int>);
const cacheCreation = counts('ephemeral_1h_input_tokens', 'ephemeral_5m_input_tokens');

export const BatchUsage = Type.Object(
  {
    prompt_tokens: Int,
    completion_tokens: Int,
    total_tokens: Int,
    cache_creation: cacheCreation,
    completion_tokens_details: counts('reasoning_tokens', 'audio_tokens', 'image_tokens'),
    prompt_tokens_details: counts(
      'cached_tokens',
      'cache_write_tokens',
      'audio_tokens',
      'file_tokens',
      'video_tokens',
    ),
    server_tool_use: counts('tool_calls_executed', 'tool_calls_requested', 'web_search_requests'),
    cost: Num,
    cost_details: Type.Object({
      upstream_inference_prompt_cost: Num,
      upstream_inference_completions_cost: Num,
      upstream_inference_cost: Nullable(Num),
    }),
    is_byok: Type.Boolean(),
    iterations: Type.Array(
      Type.Object({
        type: Str,
        input_tokens: Int,
        output_tokens: Int,
        cache_creation_input_tokens: Int,
        cache_read_input_tokens: Int,
        cache_creation: cacheCreation,
      }),
    ),
    service_tier: Str,
    speed: Str,
    input_tokens: Int,
    output_tokens: Int,
    input_tokens_details: counts('cached_tokens'),
    output_tokens_details: counts('reasoning_tokens'),
  },
  { $id: 'BatchUsage' },
);

export const BatchResultItem = Type.Object(
  {
    id: Str,
    custom_id: Str,
    response: Nullable(
      Type.Object({
        status_code: Int,
        request_id: Str,
        body: Type.Unknown({
          description: 'The endpoint response body, as the synchronous endpoint returns it',
        }),
      }),
    ),
    error: Nullable(
      Type.Object({
        message: Str,
        type: Str,
        param: Nullable(Str),
        error_type: Str,
      }),
    ),
  },
  { $id: 'BatchResultItem' },
);

const Status = Type.Union(
  [
    'validating',
    'in_progress',
    'finalizing',
    'completed',
    'failed',
    'expired',
    'cancelling',
    'cancelled',
  ].map((s) => Type.Literal(s)),
);

export const Batch = Type.Object(
  {
    id: Str,
    object: Type.Literal('batch'),
    endpoint: Str,
    model: Nullable(Type.String({ description: 'The model every request uses; null when they use several' })),
    completion_window: Str,
    status: Status,
    created_at: Type.Integer({ description: 'Unix seconds' }),
    in_progress_at: Nullable(Int),
    finalizing_at: Nullable(Int),
    cancelling_at: Nullable(Int),
    finalized_at: Nullable(Type.Integer({ description: 'Unix seconds; set in every final state' })),
    expires_at: Int,
    request_counts: counts('completed', 'failed', 'total'),
    error: Nullable(Type.Object({ message: Str })),
    usage: Type.Ref(BatchUsage),
    ...OpenAiBatchFields.properties,
    results: Type.Optional(Type.Array(Type.Ref(BatchResultItem))),
    results_page: Type.Optional(
      Type.Object(
        { offset: Int, limit: Int, total: Int, has_more: Type.Boolean() },
        {
          description: 'The page of results in this response: finished requests in request order',
        },
      ),
    ),
    results_expired_at: Type.Optional(
      Type.Integer({
        description:
          'Unix seconds: the results expired with the output files (`output_expires_after`) and are no longer served',
      }),
    ),
  },
  { $id: 'Batch' },
);

export const ResultsQuery = Type.Object({
  results_offset: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 0,
      description: 'Finished results to skip',
    }),
  ),
  results_limit: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_RESULTS_PAGE,
      default: 100,
      description: `Results to include (0–${MAX_RESULTS_PAGE}); download all with GET /batches/{id}/results`,
    }),
  ),
});

export const BatchSubmit = Type.Object(
  {
    endpoint: Type.Union(
      ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/embeddings'].map((e) => Type.Literal(e)),
    ),
    requests: Type.Optional(
      Type.Array(
        Type.Object({
          custom_id: Type.String({ minLength: 1, maxLength: 512 }),
          body: Type.Object(
            {},
            { additionalProperties: true, description: "A request body in the endpoint's format" },
          ),
          method: Type.Optional(Type.Literal('POST')),
          url: Type.Optional(Str),
        }),
        { minItems: 1 },
      ),
    ),
    input_file_id: Type.Optional(
      Type.String({ description: 'An uploaded file of purpose batch (POST /files), instead of requests' }),
    ),
    metadata: Type.Optional(Type.Record(Str, Str, { description: 'Up to 16 string pairs' })),
    output_expires_after: Type.Optional(
      Type.Object({
        anchor: Type.Literal('created_at'),
        seconds: Type.Integer({ minimum: 3600, maximum: 2592000 }),
      }),
    ),
    completion_window: Type.Literal('24h'),
    model: Type.Optional(
      Type.String({
        description:
          'Every request must use this model; without it requests may use different models (64 at most)',
      }),
    ),
    provider: Type.Optional(
      Type.Object({ only: Type.Optional(Type.Array(Str)), allow_fallbacks: Type.Optional(Type.Boolean()) }),
    ),
  },
  {
    $id: 'BatchSubmit',
    description: 'Read as a stream (up to 200 MB); documented here, validated by the ingester',
  },
);
