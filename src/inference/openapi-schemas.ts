/**
 * The inference bodies and answers as the OpenAPI document describes them — documentation only.
 * The routes validate nothing beyond "a JSON object" (the wires read what they understand and the
 * lanes pass every other field through to the provider untouched), so these schemas are attached
 * with `config.openapi` (server/openapi-only.ts) and never compiled by Fastify: an unknown or
 * provider-specific field is still accepted and forwarded, and answers are not filtered through them.
 * They name the main fields of each format, not every one; `additionalProperties` stays open.
 */

import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { SafeguardRecord } from '../activity/schemas.js';
import { FeedbackEntry } from '../feedback/schemas.js';
import { StringEnum } from '../server/schemas.js';

const open = { additionalProperties: true };
const Any = Type.Unknown();

// ── Gatehouse's routing fields, accepted on every inference body ────────────────────────────────

const Slugs = (description: string) => Type.Array(Type.String(), { description });

export const ProviderPreferences = Type.Object(
  {
    order: Type.Optional(Slugs('Provider slugs to try first, in this order')),
    only: Type.Optional(Slugs('Use only these providers')),
    ignore: Type.Optional(Slugs('Never use these providers')),
    allow_fallbacks: Type.Optional(
      Type.Boolean({ default: true, description: 'On a retryable failure, try the next endpoint' }),
    ),
    data_collection: Type.Optional(
      StringEnum(['allow', 'deny'], {
        description: '`deny`: only providers that neither train on nor store data',
      }),
    ),
    zdr: Type.Optional(Type.Boolean({ description: 'Only zero-data-retention endpoints' })),
    require_parameters: Type.Optional(
      Type.Boolean({ description: 'Only endpoints that support every parameter the request uses' }),
    ),
    max_price: Type.Optional(
      Type.Object(
        {
          prompt: Type.Optional(Type.Union([Type.Number(), Type.String()])),
          completion: Type.Optional(Type.Union([Type.Number(), Type.String()])),
          request: Type.Optional(Type.Union([Type.Number(), Type.String()])),
        },
        {
          description:
            'Highest price accepted, USD per million tokens (`request`: per call); a number or a numeric string',
        },
      ),
    ),
    sort: Type.Optional(
      Type.Unsafe<unknown>({
        description: 'Order the endpoints by `price`, `throughput` or `latency` (or `{by}`)',
        anyOf: [
          { type: 'string', enum: ['price', 'throughput', 'latency'] },
          {
            type: 'object',
            properties: { by: { type: 'string', enum: ['price', 'throughput', 'latency'] } },
          },
        ],
      }),
    ),
  },
  { $id: 'ProviderPreferences', title: 'Provider preferences', ...open },
);

/** `models`, `provider` and `debug`: what Gatehouse reads itself and never forwards. */
export const routingFields = {
  models: Type.Optional(
    Type.Array(Type.String(), {
      minItems: 1,
      description:
        'Fallback models, tried in order when the first cannot serve (the first is `model` when that is absent)',
    }),
  ),
  provider: Type.Optional(Type.Ref(ProviderPreferences)),
  debug: Type.Optional(
    Type.Object(
      {
        echo_upstream_body: Type.Optional(
          Type.Boolean({ description: 'Answer with the body sent upstream' }),
        ),
      },
      open,
    ),
  ),
};

export const modelField = Type.String({
  description: 'Model id from the catalog (`GET /models`), e.g. `openai/gpt-4o-mini`',
  examples: ['openai/gpt-4o-mini'],
});
const streamField = Type.Optional(
  Type.Boolean({ default: false, description: 'Answer as server-sent events instead of one JSON body' }),
);
const temperature = Type.Optional(Type.Number({ minimum: 0, maximum: 2 }));
const topP = Type.Optional(Type.Number({ minimum: 0, maximum: 1 }));
const Tools = (description: string) => Type.Optional(Type.Array(Type.Object({}, open), { description }));

/** Cost and BYOK fields Gatehouse adds to a `usage` object. */
export const costFields = {
  cost: Type.Optional(Type.Number({ description: 'Charged to credits, USD (0 on your own provider key)' })),
  is_byok: Type.Optional(Type.Boolean({ description: 'Served on your own provider key (BYOK)' })),
  cost_details: Type.Optional(Type.Object({}, open)),
};

// ── POST /chat/completions (OpenAI Chat Completions, OpenRouter's extensions) ──────────────────

const ChatMessage = Type.Object(
  {
    role: StringEnum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: Type.Unsafe<unknown>({
      description:
        'Text, or a list of content parts (`text`, `image_url`, `input_audio`, `file`, `video_url`)',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }, { type: 'null' }],
    }),
    name: Type.Optional(Type.String()),
    tool_calls: Type.Optional(Type.Array(Type.Object({}, open))),
    tool_call_id: Type.Optional(Type.String()),
  },
  open,
);

/** The reasoning efforts the edges take (`none`: no reasoning). */
const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

const Reasoning = Type.Object(
  {
    effort: Type.Optional(StringEnum(EFFORTS)),
    max_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
    exclude: Type.Optional(
      Type.Boolean({ description: 'Reason, but leave the reasoning out of the answer' }),
    ),
  },
  { description: 'Reasoning effort or budget (OpenRouter format), translated for each provider', ...open },
);

export const ChatCompletionRequest = Type.Object(
  {
    model: modelField,
    messages: Type.Array(ChatMessage, { minItems: 1 }),
    stream: streamField,
    stream_options: Type.Optional(Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, open)),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    temperature,
    top_p: topP,
    top_k: Type.Optional(Type.Integer({ minimum: 0 })),
    frequency_penalty: Type.Optional(Type.Number()),
    presence_penalty: Type.Optional(Type.Number()),
    stop: Type.Optional(
      Type.Unsafe<unknown>({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] }),
    ),
    seed: Type.Optional(Type.Integer()),
    n: Type.Optional(Type.Integer({ minimum: 1 })),
    tools: Tools(
      'Functions the model may call: `{type: "function", function: {name, description, parameters}}`',
    ),
    tool_choice: Type.Optional(Any),
    parallel_tool_calls: Type.Optional(Type.Boolean()),
    response_format: Type.Optional(
      Type.Object(
        {},
        { description: '`{type: "json_object"}` or `{type: "json_schema", json_schema}`', ...open },
      ),
    ),
    reasoning: Type.Optional(Reasoning),
    reasoning_effort: Type.Optional(StringEnum(EFFORTS)),
    logprobs: Type.Optional(Type.Boolean()),
    top_logprobs: Type.Optional(Type.Integer({ minimum: 0 })),
    user: Type.Optional(Type.String()),
    ...routingFields,
  },
  {
    $id: 'ChatCompletionRequest',
    title: 'Chat completion request',
    description: 'OpenAI Chat Completions body; other fields are passed to providers that take them.',
    ...open,
  },
);

export const ChatCompletion = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('chat.completion'),
    created: Type.Integer(),
    model: Type.String({ description: 'The catalog model that served' }),
    provider: Type.Optional(Type.String({ description: 'The provider that served' })),
    choices: Type.Array(
      Type.Object(
        {
          index: Type.Integer(),
          message: Type.Object(
            {
              role: Type.Literal('assistant'),
              content: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
              reasoning: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'] })),
              tool_calls: Type.Optional(Type.Array(Type.Object({}, open))),
            },
            open,
          ),
          finish_reason: Type.Unsafe<string | null>({
            type: ['string', 'null'],
            description: '`stop`, `length`, `tool_calls`, `content_filter` or `error`',
          }),
        },
        open,
      ),
    ),
    usage: Type.Object(
      {
        prompt_tokens: Type.Integer(),
        completion_tokens: Type.Integer(),
        total_tokens: Type.Integer(),
        prompt_tokens_details: Type.Optional(Type.Object({}, open)),
        completion_tokens_details: Type.Optional(Type.Object({}, open)),
        ...costFields,
      },
      open,
    ),
  },
  { $id: 'ChatCompletion', title: 'Chat completion', ...open },
);

// ── POST /completions (OpenAI legacy Completions) ──────────────────────────────────────────────

export const CompletionRequest = Type.Object(
  {
    model: modelField,
    prompt: Type.Unsafe<unknown>({
      description:
        'The text to complete; a list of prompts, token arrays, `suffix`, `echo`, `logprobs` and `best_of` only where a provider of the Completions API serves the model',
      anyOf: [{ type: 'string' }, { type: 'array' }],
    }),
    suffix: Type.Optional(Type.String()),
    stream: streamField,
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    temperature,
    top_p: topP,
    stop: Type.Optional(Type.Unsafe<unknown>({ anyOf: [{ type: 'string' }, { type: 'array' }] })),
    ...routingFields,
  },
  {
    $id: 'CompletionRequest',
    title: 'Completion request',
    description: 'OpenAI legacy Completions body; other fields are passed to providers that take them.',
    ...open,
  },
);

export const TextCompletion = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('text_completion'),
    created: Type.Integer(),
    model: Type.String({ description: 'The catalog model that served' }),
    provider: Type.Optional(Type.String({ description: 'The provider that served' })),
    choices: Type.Array(
      Type.Object(
        {
          text: Type.String(),
          index: Type.Integer(),
          finish_reason: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
        },
        open,
      ),
    ),
    usage: Type.Object(
      {
        prompt_tokens: Type.Integer(),
        completion_tokens: Type.Integer(),
        total_tokens: Type.Integer(),
        ...costFields,
      },
      open,
    ),
  },
  { $id: 'TextCompletion', title: 'Text completion', ...open },
);

// ── POST /messages and /messages/count_tokens (Anthropic Messages) ─────────────────────────────

const AnthropicMessageParam = Type.Object(
  {
    role: StringEnum(['user', 'assistant']),
    content: Type.Unsafe<unknown>({
      description:
        'Text, or a list of content blocks (`text`, `image`, `document`, `tool_use`, `tool_result`, `thinking`)',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
    }),
  },
  open,
);

const messagesFields = {
  model: modelField,
  messages: Type.Array(AnthropicMessageParam, { minItems: 1 }),
  system: Type.Optional(
    Type.Unsafe<unknown>({
      description: 'System prompt: text or a list of text blocks',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
    }),
  ),
  tools: Tools('Tools: `{name, description, input_schema}`, or server tools by `type`'),
  tool_choice: Type.Optional(Type.Object({}, open)),
  thinking: Type.Optional(
    Type.Object(
      {
        type: StringEnum(['enabled', 'disabled', 'adaptive']),
        budget_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
      },
      open,
    ),
  ),
};

export const MessagesRequest = Type.Object(
  {
    ...messagesFields,
    max_tokens: Type.Integer({ minimum: 1, description: 'Most tokens to generate' }),
    stream: streamField,
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_p: topP,
    top_k: Type.Optional(Type.Integer({ minimum: 0 })),
    stop_sequences: Type.Optional(Type.Array(Type.String())),
    metadata: Type.Optional(Type.Object({ user_id: Type.Optional(Type.String()) }, open)),
    thread: Type.Optional(
      Type.Object(
        {
          type: Type.Union([Type.Literal('create'), Type.Literal('continue')]),
          previous_message_id: Type.Optional(Type.String()),
        },
        {
          description:
            "A message thread: `create` keeps this conversation under the answer's id; `continue` " +
            'sends only the new messages after the answer `previous_message_id` names. Held by ' +
            "Anthropic's API for the models it serves, by Gatehouse for every other provider.",
        },
      ),
    ),
    ...routingFields,
  },
  {
    $id: 'MessagesRequest',
    title: 'Messages request',
    description: 'Anthropic Messages body (headers `anthropic-version` and `anthropic-beta` are passed on).',
    ...open,
  },
);

const anthropicUsage = Type.Object(
  {
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    cache_creation_input_tokens: Type.Optional(Type.Unsafe<number | null>({ type: ['integer', 'null'] })),
    cache_read_input_tokens: Type.Optional(Type.Unsafe<number | null>({ type: ['integer', 'null'] })),
  },
  open,
);

export const AnthropicMessage = Type.Object(
  {
    id: Type.String(),
    type: Type.Literal('message'),
    role: Type.Literal('assistant'),
    model: Type.String(),
    content: Type.Array(
      Type.Object({ type: Type.String({ description: '`text`, `tool_use`, `thinking` …' }) }, open),
    ),
    stop_reason: Type.Unsafe<string | null>({
      type: ['string', 'null'],
      description: '`end_turn`, `max_tokens`, `stop_sequence`, `tool_use` or `refusal`',
    }),
    stop_sequence: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'] })),
    usage: anthropicUsage,
  },
  { $id: 'AnthropicMessage', title: 'Message (Anthropic)', ...open },
);

export const CountTokensRequest = Type.Object(
  { ...messagesFields, ...routingFields },
  {
    $id: 'CountTokensRequest',
    title: 'Count tokens request',
    description: 'A Messages body without `max_tokens`: what it would send, counted.',
    ...open,
  },
);

export const CountTokensResponse = Type.Object(
  {
    input_tokens: Type.Integer({ minimum: 0 }),
    estimated: Type.Optional(
      Type.Boolean({
        description: 'true: estimated by Gatehouse (no provider serving the model counts natively)',
      }),
    ),
  },
  { $id: 'CountTokensResponse', title: 'Token count', ...open },
);

// ── POST /responses (OpenAI Responses) ─────────────────────────────────────────────────────────

export const ResponsesRequest = Type.Object(
  {
    model: modelField,
    input: Type.Unsafe<unknown>({
      description: 'Text, or a list of input items (messages, function calls and their outputs, …)',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
    }),
    instructions: Type.Optional(Type.String({ description: 'System (developer) instructions' })),
    stream: streamField,
    previous_response_id: Type.Optional(
      Type.String({ description: 'Continue from a stored response (see `store`)' }),
    ),
    conversation: Type.Optional(
      Type.Unsafe<unknown>({
        description:
          "A conversation (`POST /conversations`), by id or as `{id}`: its items go before `input`, and this turn's input and output are added to it",
        anyOf: [
          { type: 'string' },
          { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        ],
      }),
    ),
    store: Type.Optional(
      Type.Boolean({ default: true, description: 'Keep the response to continue from or fetch later' }),
    ),
    max_output_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    temperature,
    top_p: topP,
    tools: Tools('Function tools `{type: "function", name, parameters}` and built-in tools'),
    tool_choice: Type.Optional(Any),
    parallel_tool_calls: Type.Optional(Type.Boolean()),
    reasoning: Type.Optional(
      Type.Object(
        {
          effort: Type.Optional(StringEnum(EFFORTS)),
          summary: Type.Optional(Type.String()),
        },
        open,
      ),
    ),
    text: Type.Optional(Type.Object({ format: Type.Optional(Type.Object({}, open)) }, open)),
    include: Type.Optional(Type.Array(Type.String())),
    user: Type.Optional(Type.String()),
    ...routingFields,
  },
  {
    $id: 'ResponsesRequest',
    title: 'Responses request',
    description: 'OpenAI Responses body; other fields are passed to providers that take them.',
    ...open,
  },
);

export const ResponseObject = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('response'),
    created_at: Type.Integer(),
    status: Type.String({ description: '`completed`, `incomplete` or `failed`' }),
    model: Type.String(),
    output: Type.Array(
      Type.Object({ type: Type.String({ description: '`message`, `function_call`, `reasoning` …' }) }, open),
    ),
    usage: Type.Object(
      {
        input_tokens: Type.Integer(),
        output_tokens: Type.Integer(),
        total_tokens: Type.Integer(),
        ...costFields,
      },
      open,
    ),
  },
  { $id: 'Response', title: 'Response', ...open },
);

// ── POST /responses/compact and /responses/input_tokens ─────────────────────────────────────────

const responsesInput = Type.Unsafe<unknown>({
  description:
    'Text, or a list of input items (messages, function calls and their outputs, compaction items, …)',
  anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
});

export const ResponseCompactRequest = Type.Object(
  {
    model: modelField,
    input: Type.Optional(responsesInput),
    instructions: Type.Optional(Type.String({ description: 'System (developer) instructions' })),
    previous_response_id: Type.Optional(
      Type.String({ description: 'Compact the stored conversation ending with this response' }),
    ),
    ...routingFields,
  },
  {
    $id: 'ResponseCompactRequest',
    title: 'Compact request',
    description: 'The conversation to compact; other fields are passed to OpenAI on a pass-through.',
    ...open,
  },
);

export const CompactedResponse = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('response.compaction'),
    created_at: Type.Integer(),
    output: Type.Array(
      Type.Object(
        { type: Type.String({ description: "the input's user `message`s, then one `compaction` item" }) },
        open,
      ),
    ),
    usage: Type.Object(
      { input_tokens: Type.Integer(), output_tokens: Type.Integer(), total_tokens: Type.Integer() },
      open,
    ),
  },
  { $id: 'CompactedResponse', title: 'Compacted conversation', ...open },
);

export const InputTokensRequest = Type.Object(
  {
    model: modelField,
    input: Type.Optional(responsesInput),
    instructions: Type.Optional(Type.String({ description: 'System (developer) instructions' })),
    tools: Tools('The tools the request would offer'),
    ...routingFields,
  },
  {
    $id: 'InputTokensRequest',
    title: 'Input tokens request',
    description: 'A Responses body: what it would send, counted.',
    ...open,
  },
);

export const InputTokensResponse = Type.Object(
  {
    object: Type.Literal('response.input_tokens'),
    input_tokens: Type.Integer({ minimum: 0 }),
    estimated: Type.Optional(
      Type.Boolean({
        description: 'true: estimated by Gatehouse (no provider serving the model counts natively)',
      }),
    ),
  },
  { $id: 'InputTokensResponse', title: 'Input token count', ...open },
);

// ── POST /embeddings (OpenAI Embeddings) ────────────────────────────────────────────────────────

export const EmbeddingsRequest = Type.Object(
  {
    model: modelField,
    input: Type.Unsafe<unknown>({
      description: 'Text or a list of texts to embed',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    }),
    dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
    encoding_format: Type.Optional(StringEnum(['float', 'base64'], { default: 'float' })),
    user: Type.Optional(Type.String()),
    ...routingFields,
  },
  { $id: 'EmbeddingsRequest', title: 'Embeddings request', ...open },
);

export const EmbeddingsResponse = Type.Object(
  {
    object: Type.Literal('list'),
    id: Type.Optional(Type.String({ description: 'The generation id (`GET /generation?id=`)' })),
    model: Type.String(),
    provider: Type.Optional(Type.String()),
    data: Type.Array(
      Type.Object(
        {
          object: Type.Literal('embedding'),
          index: Type.Integer(),
          embedding: Type.Unsafe<unknown>({
            description: 'Floats, or a base64 string with `encoding_format: "base64"`',
            anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string' }],
          }),
        },
        open,
      ),
    ),
    usage: Type.Object({ prompt_tokens: Type.Integer(), total_tokens: Type.Integer(), ...costFields }, open),
  },
  { $id: 'EmbeddingsResponse', title: 'Embeddings', ...open },
);

// ── POST /rerank (OpenRouter's rerank) ──────────────────────────────────────────────────────────

const RerankDocument = Type.Object(
  {
    text: Type.Optional(Type.String()),
    image: Type.Optional(Type.String({ description: 'An image URL or a `data:image/…` URI' })),
  },
  { description: 'Text and/or an image (at least one)', ...open },
);

export const RerankRequest = Type.Object(
  {
    model: Type.String({ description: 'A rerank model from the catalog', examples: ['cohere/rerank-v3.5'] }),
    query: Type.String({ minLength: 1, description: 'The search query the documents are ranked against' }),
    documents: Type.Array(Type.Union([Type.String(), RerankDocument]), {
      minItems: 1,
      description: 'The documents to rank: strings, or objects with `text` and/or `image`',
    }),
    top_n: Type.Optional(Type.Integer({ minimum: 1, description: 'Return only the best n documents' })),
    ...routingFields,
  },
  { $id: 'RerankRequest', title: 'Rerank request', ...open },
);

export const RerankResponse = Type.Object(
  {
    id: Type.String({ description: 'The generation id (`GET /generation?id=`)' }),
    model: Type.String(),
    provider: Type.String(),
    results: Type.Array(
      Type.Object(
        {
          index: Type.Integer({ description: "The document's index in the request" }),
          relevance_score: Type.Number(),
          document: RerankDocument,
        },
        open,
      ),
      { description: 'Best first' },
    ),
    usage: Type.Object(
      {
        total_tokens: Type.Integer(),
        search_units: Type.Optional(Type.Integer({ description: 'Searches billed (Cohere)' })),
        ...costFields,
      },
      open,
    ),
  },
  { $id: 'RerankResponse', title: 'Rerank', ...open },
);

// ── GET /generation ─────────────────────────────────────────────────────────────────────────────

export const Generation = Type.Object(
  {
    data: Type.Object(
      {
        id: Type.String(),
        created_at: Type.String(),
        model: Type.String(),
        requested_model: Type.String(),
        provider_name: Type.String(),
        status: Type.String(),
        http_status: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
        streamed: Type.Boolean(),
        finish_reason: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
        tokens_prompt: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
        tokens_completion: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
        total_cost: Type.Unsafe<number | null>({ type: ['number', 'null'] }),
        is_byok: Type.Boolean(),
        attempts: Type.Integer(),
        latency: Type.Unsafe<number | null>({ type: ['integer', 'null'] }),
        content_url: Type.Optional(
          Type.Unsafe<string | null>({
            type: ['string', 'null'],
            description:
              "Where the call's kept content is (`GET /generation/content`), when the caller may read it",
          }),
        ),
        safeguards: Type.Unsafe<Static<typeof SafeguardRecord>[] | null>({
          type: ['array', 'null'],
          items: SafeguardRecord,
          description:
            "Every content filter that ran on the call (request, then answer; the provider's own too) and what it did: names, actions and counts, never the matched text. Null on generations recorded before this was kept.",
        }),
        gateway_metadata: Type.Unsafe<Record<string, unknown> | null>({
          type: ['object', 'null'],
          additionalProperties: true,
          description:
            'How the call was routed: `route` (lane or translated), `endpoints` considered, `endpoints_excluded`, `models_tried`, `models_skipped`, `strategy`, `dropped_fields`, a `summary`. Null on generations recorded before this was kept.',
        }),
        feedback: Type.Array(FeedbackEntry, {
          description:
            'The newest 20 entries sent with `POST /generation/feedback`, newest first (`[]` when none).',
        }),
      },
      open,
    ),
  },
  { $id: 'Generation', title: 'Generation', ...open },
);

// ── How the routes attach them ──────────────────────────────────────────────────────────────────

/** Added as shared schemas (components named by their $id); the routes' `config.openapi` refers to them. */
export const OPENAPI_SCHEMAS = [
  ProviderPreferences,
  ChatCompletionRequest,
  ChatCompletion,
  CompletionRequest,
  TextCompletion,
  MessagesRequest,
  AnthropicMessage,
  CountTokensRequest,
  CountTokensResponse,
  ResponsesRequest,
  ResponseObject,
  ResponseCompactRequest,
  CompactedResponse,
  InputTokensRequest,
  InputTokensResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  RerankRequest,
  RerankResponse,
  Generation,
];

/** A JSON answer that may instead be a stream of server-sent events (`stream: true`). */
export function jsonOrStream(schema: TSchema, description: string) {
  return {
    description,
    content: {
      'application/json': { schema: Type.Ref(schema) },
      'text/event-stream': {
        schema: Type.String({ description: 'Server-sent events in the same format, when `stream` is true' }),
      },
    },
  };
}
