/**
 * A real HTTP server (127.0.0.1, random port) that speaks the upstream wire formats Gatehouse
 * talks to, streaming included:
 *
 * - OpenAI: `POST …/chat/completions`, `POST …/embeddings`, `POST …/responses` (the Responses API:
 *   JSON, or SSE with its event sequence — response.created … response.completed),
 *   `POST …/responses/compact` (the input's user messages and an opaque compaction item) and
 *   `POST …/responses/input_tokens`
 * - Anthropic: `POST …/messages`, `POST …/messages/count_tokens` (`{"input_tokens": n}`)
 * - `GET …/models` and `GET …/models/{id}`: an Anthropic-format listing when the request carries
 *   `anthropic-version`, else OpenAI's; the ids are `mock.models` (settable; `MOCK_MODELS` by default).
 *   Anthropic's gives each model's `max_tokens` and `max_input_tokens` from `mock.modelLimits` (null
 *   when not set) and pages by `limit` / `after_id` (`mock.modelsPageSize` caps a page)
 * - Gemini: `POST …/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`,
 *   `:batchEmbedContents`
 *
 * Paths are matched by suffix, so any base URL prefix works (`${url}/v1`, `${url}/v1beta`, …).
 *
 * With nothing enqueued it answers like the real API: a text reply that names the model
 * (`Hello from <model>!`), with usage, streamed when the request asked for a stream. Tests script
 * the next responses with `enqueue(step, …)`:
 * - `reply`: a semantic answer (text, reasoning, tool calls, finish reason, usage) rendered in the
 *   wire format of whatever request takes it, streamed or not as that request asked (Responses:
 *   reasoning is a `reasoning` item with a summary, plus `encrypted_content` when `include` asks;
 *   tool calls are `function_call` items; usage has cached_tokens and reasoning_tokens details);
 * - `status` + `error` (or a raw `body`) for error responses, rendered per format;
 * - `body` / `stream` for exact raw bodies and SSE events;
 * - `delayMs` before the headers, `eventDelayMs` between events, `dieAfterEvents` to destroy the
 *   socket mid-stream (the client sees a connection error, not a clean end);
 * - faults: `resetBeforeHeaders` (TCP RST once the request is read, no response at all),
 *   `endAfterEvents` (a clean end of the body after n events: a truncated stream),
 *   `stallAfterEvents` (no more bytes after n events, connection kept open until the client leaves),
 *   `pause` (a silence of `ms` after n events, then the rest: a model thinking mid-stream);
 * - `match` to reserve a step for requests on a path/model/format, `times` to repeat it.
 * - web search: a request asking for the vendor's search (Anthropic's `web_search_*` server tool,
 *   OpenAI's `web_search_options`, Gemini's `googleSearch` tool) is answered as that vendor answers
 *   a search (MockReply.webSearch; a default search when the reply sets none): Anthropic's
 *   server_tool_use + web_search_tool_result blocks, cited text and usage.server_tool_use; OpenAI's
 *   `url_citation` annotations; Gemini's groundingMetadata — streamed too.
 * `requests` records every request (method, path, headers, parsed body) for assertions, and
 * `wireView(request)` normalises any of the formats into one shape (system, turns, tools, auth).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type MockFormat =
  | 'openai-chat'
  | 'openai-completions'
  | 'openai-embeddings'
  | 'openai-responses'
  | 'openai-responses-compact'
  | 'openai-responses-input-tokens'
  | 'openai-models'
  | 'anthropic-messages'
  | 'anthropic-count-tokens'
  | 'anthropic-models'
  | 'gemini-generate'
  | 'gemini-stream'
  | 'gemini-embed'
  | 'unknown';

export interface MockToolCall {
  id?: string;
  name: string;
  /** An object (JSON-encoded on the wire) or a JSON string. */
  arguments?: unknown;
}

export interface MockReply {
  text?: string;
  reasoning?: string;
  /** Anthropic: the thinking block's `signature` (default `mock-signature`). */
  signature?: string;
  /** Anthropic: a `redacted_thinking` block with this `data`, after the thinking block. */
  redactedThinking?: string;
  /**
   * Gemini: a `thoughtSignature` on the first functionCall part, or on the last text part when the
   * reply calls no function (as Gemini puts them; none by default).
   */
  thoughtSignature?: string;
  /** Gemini: a `thoughtSignature` on the last thought part (closing the thought run). */
  thoughtPartSignature?: string;
  tool_calls?: MockToolCall[];
  /** Canonical finish reason, rendered per format (default: tool_calls when calling tools, else stop). */
  finish_reason?: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    cached_tokens?: number;
    /** Anthropic: cache writes (`cache_creation_input_tokens`), part of prompt_tokens like reads. */
    cache_write_tokens?: number;
    reasoning_tokens?: number;
  };
  /** OpenAI streams: no usage chunk even when include_usage was asked. */
  omitUsage?: boolean;
  /** OpenAI streams: end without `data: [DONE]`. */
  omitDone?: boolean;
  /** Tool call arguments are streamed in this many pieces (default 3). */
  argPieces?: number;
  /**
   * A web search the model ran, its pages, and the whole text citing the first page. Set by default
   * (MOCK_SEARCH) when the request asks for the vendor's search.
   */
  webSearch?: MockWebSearch;
}

export interface MockWebSearch {
  query: string;
  results: { url: string; title: string }[];
  /** The cited passage (Anthropic's cited_text, Gemini's segment text); default: the whole text. */
  cited?: string;
}

/** The search the mock runs when a request asks for one and the reply names none. */
export const MOCK_SEARCH: MockWebSearch = {
  query: 'latest gatehouse release',
  results: [
    { url: 'https://example.com/release', title: 'Gatehouse release notes' },
    { url: 'https://example.org/blog', title: 'A blog post' },
  ],
};

/** Whether a request body asks for the vendor's own web search. */
function asksForSearch(body: any): boolean {
  if (body?.web_search_options) return true;
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  return tools.some(
    (t) => (typeof t?.type === 'string' && /^web_search/.test(t.type)) || t?.googleSearch !== undefined,
  );
}

/** A raw SSE event: `data` objects are JSON-encoded; `raw` is written verbatim (bytes: any cut of them). */
export type MockStreamEvent = { event?: string; data: unknown } | { raw: string | Uint8Array };

export interface MockStep {
  /** Only requests matching all given fields take this step (others take later/unmatched ones). */
  match?: { path?: string | RegExp; model?: string; format?: MockFormat; apiKey?: string };
  /** How many requests this step answers (default 1). */
  times?: number;
  status?: number;
  headers?: Record<string, string>;
  /** Raw body (JSON-encoded unless a string). */
  body?: unknown;
  /** Raw SSE events (sent with `content-type: text/event-stream`). */
  stream?: MockStreamEvent[];
  /** Semantic reply rendered in the request's format. */
  reply?: MockReply;
  /** For status ≥ 400 without `body`: the error rendered in the request's format. */
  error?: { message?: string; type?: string };
  /** Embedding vectors to answer an embeddings request with. */
  embeddings?: number[][];
  /** Wait before sending headers. */
  delayMs?: number;
  /** Wait between stream events. */
  eventDelayMs?: number;
  /** Destroy the socket after this many stream events (a stream dying mid-way). */
  dieAfterEvents?: number;
  /** Reset the connection (RST) once the request is read: no status line ever comes. */
  resetBeforeHeaders?: boolean;
  /** End the response cleanly after this many stream events (the final event never comes). */
  endAfterEvents?: number;
  /** Send nothing more after this many stream events; hold the connection until the client goes. */
  stallAfterEvents?: number;
  /** Send nothing for `ms` after `afterEvents` stream events, then the rest (a model thinking). */
  pause?: { afterEvents: number; ms: number };
}

export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  /** JSON-parsed body, or the raw text when it is not JSON. */
  body: any;
  /** The body as it arrived (text). */
  raw: string;
  format: MockFormat;
  /** The model the request names (body.model, or the Gemini path segment). */
  model: string | null;
  stream: boolean;
}

export interface MockUpstream {
  /** e.g. http://127.0.0.1:43210 (no trailing slash) */
  url: string;
  /** The ids `GET …/models` lists (edit it to change the listing). */
  models: string[];
  /** What Anthropic's listing says of a model's limits (unset: null). */
  modelLimits?: Record<string, { max_tokens?: number; max_input_tokens?: number }>;
  /** The most models one page of Anthropic's listing holds (unset: as many as `limit` asks). */
  modelsPageSize?: number;
  close(): Promise<void>;
  enqueue(...steps: MockStep[]): void;
  requests: RecordedRequest[];
  /** Clears the queue and the recorded requests. */
  reset(): void;
}

// ---------------------------------------------------------------------------------------------
// Format detection

/** `headers` tell the two model listings apart (Anthropic's clients send `anthropic-version`). */
export function formatOf(method: string, path: string, headers: RecordedRequest['headers'] = {}): MockFormat {
  if (method === 'GET' && /\/models(\/[^/:]+)?$/.test(path)) {
    return headers['anthropic-version'] ? 'anthropic-models' : 'openai-models';
  }
  if (method !== 'POST') return 'unknown';
  if (path.endsWith('/chat/completions')) return 'openai-chat';
  if (path.endsWith('/completions')) return 'openai-completions';
  if (path.endsWith('/embeddings')) return 'openai-embeddings';
  if (path.endsWith('/responses')) return 'openai-responses';
  if (path.endsWith('/responses/compact')) return 'openai-responses-compact';
  if (path.endsWith('/responses/input_tokens')) return 'openai-responses-input-tokens';
  if (path.endsWith('/messages')) return 'anthropic-messages';
  if (path.endsWith('/messages/count_tokens')) return 'anthropic-count-tokens';
  if (path.endsWith(':generateContent')) return 'gemini-generate';
  if (path.endsWith(':streamGenerateContent')) return 'gemini-stream';
  if (path.endsWith(':batchEmbedContents')) return 'gemini-embed';
  return 'unknown';
}

function modelOf(format: MockFormat, path: string, body: any): string | null {
  if (format.startsWith('gemini')) {
    const m = /\/models\/([^/:]+):/.exec(path);
    return m ? decodeURIComponent(m[1] as string) : null;
  }
  return body && typeof body === 'object' && typeof body.model === 'string' ? body.model : null;
}

// ---------------------------------------------------------------------------------------------
// Rendering helpers

const words = (s: string): number => s.split(/\s+/).filter(Boolean).length;
let seq = 0;
const rid = (prefix: string) => `${prefix}${Date.now().toString(36)}${(++seq).toString(36).padStart(4, '0')}`;

function pieces(s: string, n: number): string[] {
  if (!s) return [];
  const size = Math.max(1, Math.ceil(s.length / n));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/** Text split into word pieces that concatenate back to it. */
const textPieces = (s: string): string[] => s.match(/\s*\S+\s*/g) ?? (s ? [s] : []);

const argsJson = (a: unknown): string => (typeof a === 'string' ? a : JSON.stringify(a ?? {}));

function requestWords(body: any): number {
  try {
    return Math.max(
      1,
      words(
        JSON.stringify(body?.messages ?? body?.contents ?? body?.input ?? body ?? '').replace(
          /[{}[\]",:]/g,
          ' ',
        ),
      ),
    );
  } catch {
    return 1;
  }
}

/** A semantic reply with every default filled in (what the renderers take). */
export interface Resolved {
  text: string;
  reasoning: string;
  calls: { id: string; name: string; args: string }[];
  finish: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  prompt: number;
  completion: number;
  cached: number;
  reasoningTokens: number;
  reply: MockReply;
}

export function resolveReply(reply: MockReply | undefined, model: string, reqBody: any): Resolved {
  let r = reply ?? { text: `Hello from ${model}!` };
  if (!r.webSearch && asksForSearch(reqBody)) r = { ...r, webSearch: MOCK_SEARCH };
  const calls = (r.tool_calls ?? []).map((tc, i) => ({
    id: tc.id ?? `call_${rid('')}${i}`,
    name: tc.name,
    args: argsJson(tc.arguments),
  }));
  const text = r.text ?? (calls.length ? '' : `Hello from ${model}!`);
  const reasoning = r.reasoning ?? '';
  const reasoningTokens = r.usage?.reasoning_tokens ?? words(reasoning);
  return {
    text,
    reasoning,
    calls,
    finish: r.finish_reason ?? (calls.length ? 'tool_calls' : 'stop'),
    prompt: r.usage?.prompt_tokens ?? requestWords(reqBody),
    completion:
      r.usage?.completion_tokens ??
      Math.max(1, words(text) + reasoningTokens + calls.reduce((n, c) => n + words(c.args), 0)),
    cached: r.usage?.cached_tokens ?? 0,
    reasoningTokens,
    reply: r,
  };
}

const ERROR_TYPES: Record<number, { openai: string; anthropic: string; google: string }> = {
  400: { openai: 'invalid_request_error', anthropic: 'invalid_request_error', google: 'INVALID_ARGUMENT' },
  401: { openai: 'invalid_request_error', anthropic: 'authentication_error', google: 'UNAUTHENTICATED' },
  403: { openai: 'invalid_request_error', anthropic: 'permission_error', google: 'PERMISSION_DENIED' },
  404: { openai: 'invalid_request_error', anthropic: 'not_found_error', google: 'NOT_FOUND' },
  408: { openai: 'timeout', anthropic: 'timeout_error', google: 'DEADLINE_EXCEEDED' },
  413: { openai: 'invalid_request_error', anthropic: 'request_too_large', google: 'INVALID_ARGUMENT' },
  429: { openai: 'rate_limit_exceeded', anthropic: 'rate_limit_error', google: 'RESOURCE_EXHAUSTED' },
  500: { openai: 'server_error', anthropic: 'api_error', google: 'INTERNAL' },
  502: { openai: 'server_error', anthropic: 'api_error', google: 'UNAVAILABLE' },
  503: { openai: 'server_error', anthropic: 'overloaded_error', google: 'UNAVAILABLE' },
  504: { openai: 'server_error', anthropic: 'timeout_error', google: 'DEADLINE_EXCEEDED' },
  529: { openai: 'server_error', anthropic: 'overloaded_error', google: 'UNAVAILABLE' },
};

/**
 * OpenAI's compaction answer: the input's user messages, then one compaction item whose
 * `encrypted_content` is OpenAI's (opaque: here the reply's text, base64 under a marker).
 */
function renderCompaction(r: Resolved, body: any): unknown {
  const input: any[] =
    typeof body?.input === 'string' ? [{ role: 'user', content: body.input }] : (body?.input ?? []);
  const users = input
    .filter((i) => (i?.type ?? 'message') === 'message' && i?.role === 'user')
    .map((i, n) => ({
      id: `msg_mock_${n}`,
      type: 'message',
      status: 'completed',
      role: 'user',
      content: i.content,
    }));
  return {
    id: rid('cmp_'),
    object: 'response.compaction',
    created_at: Math.floor(Date.now() / 1000),
    output: [
      ...users,
      {
        id: rid('cmp_'),
        type: 'compaction',
        encrypted_content: `openai-sealed.${Buffer.from(r.text).toString('base64')}`,
      },
    ],
    usage: {
      input_tokens: r.prompt,
      input_tokens_details: { cached_tokens: r.cached },
      output_tokens: r.completion,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: r.prompt + r.completion,
    },
  };
}

/** An error body in the wire format of `format`. */
export function renderError(format: MockFormat, status: number, error: MockStep['error'] = {}): unknown {
  const types = ERROR_TYPES[status] ?? ERROR_TYPES[status >= 500 ? 500 : 400]!;
  const message = error.message ?? `mock upstream error ${status}`;
  if (format.startsWith('anthropic')) {
    return {
      type: 'error',
      error: { type: error.type ?? types.anthropic, message },
      request_id: rid('req_'),
    };
  }
  if (format.startsWith('gemini')) {
    return { error: { code: status, message, status: error.type ?? types.google } };
  }
  return { error: { message, type: error.type ?? types.openai, param: null, code: error.type ?? null } };
}

// --- OpenAI

function openaiUsage(r: Resolved) {
  return {
    prompt_tokens: r.prompt,
    completion_tokens: r.completion,
    total_tokens: r.prompt + r.completion,
    prompt_tokens_details: { cached_tokens: r.cached, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: r.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** OpenAI's citations of a search: the whole text cites the first page. */
function openAiAnnotations(r: Resolved): unknown[] {
  const ws = r.reply.webSearch;
  const first = ws?.results[0];
  if (!first || !r.text) return [];
  return [
    {
      type: 'url_citation',
      url_citation: { url: first.url, title: first.title, start_index: 0, end_index: r.text.length },
    },
  ];
}

export function renderOpenAiCompletion(r: Resolved, model: string): unknown {
  return {
    id: rid('chatcmpl-'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: r.text || (r.calls.length ? null : ''),
          refusal: null,
          annotations: openAiAnnotations(r),
          ...(r.reasoning ? { reasoning_content: r.reasoning } : {}),
          ...(r.calls.length
            ? {
                tool_calls: r.calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.args },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: r.finish,
      },
    ],
    usage: openaiUsage(r),
    service_tier: 'default',
    system_fingerprint: 'fp_mock0001',
  };
}

export function renderOpenAiStream(r: Resolved, model: string, includeUsage: boolean): MockStreamEvent[] {
  const id = rid('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const base = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    data: {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      service_tier: 'default',
      system_fingerprint: 'fp_mock0001',
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    },
  });
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    base([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const events: MockStreamEvent[] = [delta({ role: 'assistant', content: '', refusal: null })];
  for (const p of textPieces(r.reasoning)) events.push(delta({ reasoning_content: p }));
  for (const p of textPieces(r.text)) events.push(delta({ content: p }));
  const annotations = openAiAnnotations(r);
  if (annotations.length) events.push(delta({ annotations }));
  r.calls.forEach((c, index) => {
    events.push(
      delta({
        tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }],
      }),
    );
    for (const p of pieces(c.args, r.reply.argPieces ?? 3)) {
      events.push(delta({ tool_calls: [{ index, function: { arguments: p } }] }));
    }
  });
  events.push(delta({}, r.finish));
  if (includeUsage && !r.reply.omitUsage) events.push(base([], { usage: openaiUsage(r) }));
  if (!r.reply.omitDone) events.push({ data: '[DONE]' });
  return events;
}

/** OpenAI's legacy Completions answer (vLLM's and llama.cpp's shape): the reply as `text`. */
export function renderTextCompletion(r: Resolved, model: string): unknown {
  return {
    id: rid('cmpl-'),
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, text: r.text, logprobs: null, finish_reason: r.finish }],
    usage: {
      prompt_tokens: r.prompt,
      completion_tokens: r.completion,
      total_tokens: r.prompt + r.completion,
    },
  };
}

/** A legacy Completions stream: text pieces, the finish, the usage chunk when asked for, `[DONE]`. */
export function renderTextCompletionStream(
  r: Resolved,
  model: string,
  includeUsage: boolean,
): MockStreamEvent[] {
  const id = rid('cmpl-');
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    data: {
      id,
      object: 'text_completion',
      created,
      model,
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    },
  });
  const events: MockStreamEvent[] = textPieces(r.text).map((text) =>
    chunk([{ index: 0, text, logprobs: null, finish_reason: null }]),
  );
  events.push(chunk([{ index: 0, text: '', logprobs: null, finish_reason: r.finish }]));
  if (includeUsage)
    events.push(
      chunk([], {
        usage: {
          prompt_tokens: r.prompt,
          completion_tokens: r.completion,
          total_tokens: r.prompt + r.completion,
        },
      }),
    );
  events.push({ data: '[DONE]' });
  return events;
}

// --- Anthropic

const ANTHROPIC_STOP = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

function anthropicUsage(r: Resolved, output: number) {
  return {
    input_tokens: Math.max(0, r.prompt - r.cached - (r.reply.usage?.cache_write_tokens ?? 0)),
    cache_creation_input_tokens: r.reply.usage?.cache_write_tokens ?? 0,
    cache_read_input_tokens: r.cached,
    output_tokens: output,
    ...(r.reply.webSearch ? { server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 } } : {}),
    service_tier: 'standard',
  };
}

const SEARCH_ID = 'srvtoolu_mock01';

/** Anthropic's blocks of a search: the call, its results. */
function anthropicSearchBlocks(ws: MockWebSearch): Record<string, unknown>[] {
  return [
    { type: 'server_tool_use', id: SEARCH_ID, name: 'web_search', input: { query: ws.query } },
    {
      type: 'web_search_tool_result',
      tool_use_id: SEARCH_ID,
      content: ws.results.map((x) => ({
        type: 'web_search_result',
        url: x.url,
        title: x.title,
        encrypted_content: 'EncMock==',
        page_age: 'April 1, 2026',
      })),
    },
  ];
}

/** The citation of the first page, as Anthropic puts it on a text block. */
function anthropicCitation(r: Resolved): Record<string, unknown> | null {
  const first = r.reply.webSearch?.results[0];
  if (!first) return null;
  return {
    type: 'web_search_result_location',
    url: first.url,
    title: first.title,
    cited_text: r.reply.webSearch?.cited ?? r.text,
    encrypted_index: 'EncIdx==',
  };
}

const anthropicSignature = (r: Resolved): string => r.reply.signature ?? 'mock-signature';

export function renderAnthropicMessage(r: Resolved, model: string): unknown {
  const content: unknown[] = [];
  if (r.reasoning)
    content.push({ type: 'thinking', thinking: r.reasoning, signature: anthropicSignature(r) });
  if (r.reply.redactedThinking) content.push({ type: 'redacted_thinking', data: r.reply.redactedThinking });
  if (r.reply.webSearch) content.push(...anthropicSearchBlocks(r.reply.webSearch));
  const citation = anthropicCitation(r);
  if (r.text) content.push({ type: 'text', text: r.text, ...(citation ? { citations: [citation] } : {}) });
  for (const c of r.calls)
    content.push({ type: 'tool_use', id: c.id, name: c.name, input: JSON.parse(c.args) });
  return {
    id: rid('msg_'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: ANTHROPIC_STOP[r.finish],
    stop_sequence: null,
    usage: anthropicUsage(r, r.completion),
  };
}

export function renderAnthropicStream(r: Resolved, model: string): MockStreamEvent[] {
  const ev = (data: { type: string } & Record<string, unknown>): MockStreamEvent => ({
    event: data.type,
    data,
  });
  const events: MockStreamEvent[] = [
    ev({
      type: 'message_start',
      message: {
        id: rid('msg_'),
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: anthropicUsage(r, 1),
      },
    }),
    ev({ type: 'ping' }),
  ];
  let index = 0;
  if (r.reasoning) {
    events.push(
      ev({
        type: 'content_block_start',
        index,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      }),
    );
    for (const p of textPieces(r.reasoning)) {
      events.push(ev({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: p } }));
    }
    events.push(
      ev({
        type: 'content_block_delta',
        index,
        delta: { type: 'signature_delta', signature: anthropicSignature(r) },
      }),
    );
    events.push(ev({ type: 'content_block_stop', index }));
    index++;
  }
  if (r.reply.redactedThinking) {
    events.push(
      ev({
        type: 'content_block_start',
        index,
        content_block: { type: 'redacted_thinking', data: r.reply.redactedThinking },
      }),
    );
    events.push(ev({ type: 'content_block_stop', index }));
    index++;
  }
  if (r.reply.webSearch) {
    const [use, result] = anthropicSearchBlocks(r.reply.webSearch);
    events.push(ev({ type: 'content_block_start', index, content_block: { ...use, input: {} } }));
    const partial_json = JSON.stringify((use as { input: unknown }).input);
    events.push(
      ev({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }),
    );
    events.push(ev({ type: 'content_block_stop', index }));
    index++;
    events.push(ev({ type: 'content_block_start', index, content_block: result }));
    events.push(ev({ type: 'content_block_stop', index }));
    index++;
  }
  const citation = anthropicCitation(r);
  if (r.text) {
    events.push(
      ev({
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '', ...(citation ? { citations: [] } : {}) },
      }),
    );
    if (citation)
      events.push(ev({ type: 'content_block_delta', index, delta: { type: 'citations_delta', citation } }));
    for (const p of textPieces(r.text)) {
      events.push(ev({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: p } }));
    }
    events.push(ev({ type: 'content_block_stop', index }));
    index++;
  }
  for (const c of r.calls) {
    events.push(
      ev({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} },
      }),
    );
    for (const p of pieces(c.args, r.reply.argPieces ?? 3)) {
      events.push(
        ev({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: p } }),
      );
    }
    events.push(ev({ type: 'content_block_stop', index }));
    index++;
  }
  events.push(
    ev({
      type: 'message_delta',
      delta: { stop_reason: ANTHROPIC_STOP[r.finish], stop_sequence: null },
      usage: {
        output_tokens: r.completion,
        ...(r.reply.webSearch ? { server_tool_use: { web_search_requests: 1 } } : {}),
      },
    }),
  );
  events.push(ev({ type: 'message_stop' }));
  return events;
}

// --- OpenAI Responses

function responsesUsage(r: Resolved) {
  return {
    input_tokens: r.prompt,
    input_tokens_details: { cached_tokens: r.cached },
    output_tokens: r.completion,
    output_tokens_details: { reasoning_tokens: r.reasoningTokens },
    total_tokens: r.prompt + r.completion,
  };
}

/** The output items of a finished response: reasoning, then the message, then function calls. */
function responsesOutput(r: Resolved, ids: ResponsesIds, reqBody: any): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (r.reasoning) out.push(reasoningItem(r, ids, reqBody, r.reasoning));
  if (r.text) out.push(messageItem(ids, 'completed', r.text));
  r.calls.forEach((c, i) => {
    out.push(functionCallItem(ids, i, c, 'completed', c.args));
  });
  return out;
}

interface ResponsesIds {
  response: string;
  reasoning: string;
  message: string;
  calls: string[];
}

const responsesIds = (r: Resolved): ResponsesIds => ({
  response: rid('resp_'),
  reasoning: rid('rs_'),
  message: rid('msg_'),
  calls: r.calls.map(() => rid('fc_')),
});

/** As OpenAI does, encrypted reasoning only when `include` asks for it (opaque: base64 here). */
function reasoningItem(r: Resolved, ids: ResponsesIds, reqBody: any, summary: string | null) {
  const encrypted =
    Array.isArray(reqBody?.include) && reqBody.include.includes('reasoning.encrypted_content');
  return {
    id: ids.reasoning,
    type: 'reasoning',
    summary: summary === null ? [] : [{ type: 'summary_text', text: summary }],
    ...(encrypted ? { encrypted_content: Buffer.from(`mock:${r.reasoning}`).toString('base64') } : {}),
  };
}

const outputText = (text: string) => ({ type: 'output_text', annotations: [], logprobs: [], text });

const messageItem = (ids: ResponsesIds, status: string, text: string | null) => ({
  id: ids.message,
  type: 'message',
  status,
  content: text === null ? [] : [outputText(text)],
  role: 'assistant',
});

const functionCallItem = (
  ids: ResponsesIds,
  i: number,
  c: Resolved['calls'][number],
  status: string,
  args: string,
) => ({ id: ids.calls[i], type: 'function_call', status, arguments: args, call_id: c.id, name: c.name });

/** The response object: the request's settings echoed back, as the API does. */
function responseObject(
  r: Resolved,
  ids: ResponsesIds,
  model: string,
  reqBody: any,
  created: number,
  final: boolean,
) {
  const b = reqBody && typeof reqBody === 'object' ? reqBody : {};
  const incomplete = r.finish === 'length' || r.finish === 'content_filter';
  return {
    id: ids.response,
    object: 'response',
    created_at: created,
    status: final ? (incomplete ? 'incomplete' : 'completed') : 'in_progress',
    background: false,
    completed_at: final ? Math.floor(Date.now() / 1000) : null,
    error: null,
    incomplete_details:
      final && incomplete ? { reason: r.finish === 'length' ? 'max_output_tokens' : 'content_filter' } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    max_tool_calls: b.max_tool_calls ?? null,
    model,
    output: final ? responsesOutput(r, ids, b) : [],
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    prompt_cache_key: b.prompt_cache_key ?? null,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: b.reasoning?.summary ?? null },
    safety_identifier: b.safety_identifier ?? null,
    service_tier: final ? 'default' : (b.service_tier ?? 'auto'),
    store: b.store ?? true,
    temperature: b.temperature ?? 1,
    text: b.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_logprobs: b.top_logprobs ?? 0,
    top_p: b.top_p ?? 1,
    truncation: b.truncation ?? 'disabled',
    usage: final ? responsesUsage(r) : null,
    user: b.user ?? null,
    metadata: b.metadata ?? {},
  };
}

export function renderResponsesResponse(r: Resolved, model: string, reqBody: any): unknown {
  return responseObject(r, responsesIds(r), model, reqBody, Math.floor(Date.now() / 1000), true);
}

/**
 * The Responses API's stream: every event named by `event:` and numbered by `sequence_number`;
 * each output item opens with output_item.added and closes with output_item.done carrying the
 * whole item, and the stream ends with response.completed (response.incomplete when cut short).
 */
export function renderResponsesStream(r: Resolved, model: string, reqBody: any): MockStreamEvent[] {
  const ids = responsesIds(r);
  const created = Math.floor(Date.now() / 1000);
  const events: MockStreamEvent[] = [];
  const ev = (type: string, fields: Record<string, unknown>) =>
    events.push({ event: type, data: { type, sequence_number: events.length, ...fields } });
  ev('response.created', { response: responseObject(r, ids, model, reqBody, created, false) });
  ev('response.in_progress', { response: responseObject(r, ids, model, reqBody, created, false) });
  let output_index = 0;
  if (r.reasoning) {
    const item_id = ids.reasoning;
    const part = (text: string) => ({ type: 'summary_text', text });
    ev('response.output_item.added', { output_index, item: reasoningItem(r, ids, reqBody, null) });
    ev('response.reasoning_summary_part.added', { item_id, output_index, summary_index: 0, part: part('') });
    for (const delta of textPieces(r.reasoning)) {
      ev('response.reasoning_summary_text.delta', {
        item_id,
        output_index,
        summary_index: 0,
        delta,
      });
    }
    ev('response.reasoning_summary_text.done', {
      item_id,
      output_index,
      summary_index: 0,
      text: r.reasoning,
    });
    ev('response.reasoning_summary_part.done', {
      item_id,
      output_index,
      summary_index: 0,
      part: part(r.reasoning),
    });
    ev('response.output_item.done', { output_index, item: reasoningItem(r, ids, reqBody, r.reasoning) });
    output_index++;
  }
  if (r.text) {
    const item_id = ids.message;
    const at = { item_id, output_index, content_index: 0 };
    ev('response.output_item.added', { output_index, item: messageItem(ids, 'in_progress', null) });
    ev('response.content_part.added', { ...at, part: outputText('') });
    for (const delta of textPieces(r.text)) ev('response.output_text.delta', { ...at, delta, logprobs: [] });
    ev('response.output_text.done', { ...at, text: r.text, logprobs: [] });
    ev('response.content_part.done', { ...at, part: outputText(r.text) });
    ev('response.output_item.done', { output_index, item: messageItem(ids, 'completed', r.text) });
    output_index++;
  }
  r.calls.forEach((c, i) => {
    const item_id = ids.calls[i];
    ev('response.output_item.added', { output_index, item: functionCallItem(ids, i, c, 'in_progress', '') });
    for (const delta of pieces(c.args, r.reply.argPieces ?? 3)) {
      ev('response.function_call_arguments.delta', { item_id, output_index, delta });
    }
    ev('response.function_call_arguments.done', { item_id, output_index, name: c.name, arguments: c.args });
    ev('response.output_item.done', { output_index, item: functionCallItem(ids, i, c, 'completed', c.args) });
    output_index++;
  });
  const final = responseObject(r, ids, model, reqBody, created, true);
  ev(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return events;
}

// --- Gemini

const GEMINI_FINISH = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP', content_filter: 'SAFETY' };

function geminiUsage(r: Resolved, final: boolean) {
  const candidates = Math.max(0, r.completion - r.reasoningTokens);
  return {
    promptTokenCount: r.prompt,
    ...(final ? { candidatesTokenCount: candidates } : {}),
    totalTokenCount: r.prompt + (final ? r.completion : 0),
    ...(r.cached ? { cachedContentTokenCount: r.cached } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: r.prompt }],
    ...(final && r.reasoningTokens ? { thoughtsTokenCount: r.reasoningTokens } : {}),
  };
}

/** Gemini's thought signatures on a reply's parts (see MockReply), in place. */
function signGeminiParts(r: Resolved, parts: Record<string, unknown>[]): void {
  const { thoughtSignature, thoughtPartSignature } = r.reply;
  const lastThought = parts.findLast((p) => p.thought === true);
  if (thoughtPartSignature && lastThought) lastThought.thoughtSignature = thoughtPartSignature;
  if (!thoughtSignature) return;
  const target =
    parts.find((p) => p.functionCall) ?? parts.findLast((p) => typeof p.text === 'string' && !p.thought);
  if (target) target.thoughtSignature = thoughtSignature;
}

/** Gemini's grounding of a search: the whole text is supported by the first page. */
function geminiGrounding(r: Resolved): Record<string, unknown> {
  const ws = r.reply.webSearch;
  if (!ws) return {};
  const cited = ws.cited ?? r.text;
  const start = Buffer.byteLength(r.text.slice(0, Math.max(0, r.text.indexOf(cited))));
  return {
    groundingMetadata: {
      webSearchQueries: [ws.query],
      searchEntryPoint: { renderedContent: '<div>mock</div>' },
      groundingChunks: ws.results.map((x) => ({ web: { uri: x.url, title: x.title } })),
      groundingSupports: [
        {
          segment: { startIndex: start, endIndex: start + Buffer.byteLength(cited), text: cited },
          groundingChunkIndices: [0],
        },
      ],
    },
  };
}

export function renderGeminiResponse(r: Resolved, model: string): unknown {
  const parts: Record<string, unknown>[] = [];
  if (r.reasoning) parts.push({ text: r.reasoning, thought: true });
  if (r.text) parts.push({ text: r.text });
  for (const c of r.calls) parts.push({ functionCall: { name: c.name, args: JSON.parse(c.args) } });
  signGeminiParts(r, parts);
  return {
    candidates: [
      {
        content: { parts, role: 'model' },
        finishReason: GEMINI_FINISH[r.finish],
        index: 0,
        ...geminiGrounding(r),
      },
    ],
    usageMetadata: geminiUsage(r, true),
    modelVersion: model,
    responseId: rid('resp-'),
  };
}

export function renderGeminiStream(r: Resolved, model: string): MockStreamEvent[] {
  const responseId = rid('resp-');
  const parts: Record<string, unknown>[][] = [];
  for (const p of textPieces(r.reasoning)) parts.push([{ text: p, thought: true }]);
  for (const p of textPieces(r.text)) parts.push([{ text: p }]);
  for (const c of r.calls) parts.push([{ functionCall: { name: c.name, args: JSON.parse(c.args) } }]);
  if (parts.length === 0) parts.push([{ text: '' }]);
  signGeminiParts(r, parts.flat());
  return parts.map((p, i) => {
    const last = i === parts.length - 1;
    return {
      data: {
        candidates: [
          {
            content: { parts: p, role: 'model' },
            ...(last ? { finishReason: GEMINI_FINISH[r.finish], ...geminiGrounding(r) } : {}),
            index: 0,
          },
        ],
        usageMetadata: geminiUsage(r, last),
        modelVersion: model,
        responseId,
      },
    };
  });
}

// --- Model listings

/** Ids `GET …/models` lists unless the test sets `mock.models`. */
export const MOCK_MODELS = ['gpt-mock', 'claude-mock'];

const MODEL_CREATED = 1_750_000_000;

function openAiModel(id: string) {
  return { id, object: 'model', created: MODEL_CREATED, owned_by: 'mock' };
}

interface Listing {
  models: string[];
  modelLimits: NonNullable<MockUpstream['modelLimits']>;
  modelsPageSize?: number;
}

function anthropicModel(id: string, listing?: Listing) {
  return {
    type: 'model',
    id,
    display_name: id,
    created_at: new Date(MODEL_CREATED * 1000).toISOString(),
    max_tokens: listing?.modelLimits[id]?.max_tokens ?? null,
    max_input_tokens: listing?.modelLimits[id]?.max_input_tokens ?? null,
  };
}

/** `GET …/models` (a listing) or `GET …/models/{id}` (one model; 404 when it is not listed). */
function renderModels(
  format: MockFormat,
  path: string,
  query: Record<string, string>,
  listing: Listing,
): { status: number; body: unknown } {
  const { models } = listing;
  const one = /\/models\/([^/]+)$/.exec(path);
  const render = format === 'anthropic-models' ? (id: string) => anthropicModel(id, listing) : openAiModel;
  if (one) {
    const id = decodeURIComponent(one[1] as string);
    return models.includes(id)
      ? { status: 200, body: render(id) }
      : { status: 404, body: renderError(format, 404, { message: `model '${id}' not found` }) };
  }
  if (format === 'anthropic-models') {
    const start = query.after_id ? models.indexOf(query.after_id) + 1 : 0;
    const size = Math.min(Number(query.limit) || 20, listing.modelsPageSize ?? Number.POSITIVE_INFINITY);
    const page = models.slice(start, start + size);
    return {
      status: 200,
      body: {
        data: page.map((id) => anthropicModel(id, listing)),
        has_more: start + size < models.length,
        first_id: page[0] ?? null,
        last_id: page[page.length - 1] ?? null,
      },
    };
  }
  return { status: 200, body: { object: 'list', data: models.map(openAiModel) } };
}

// --- Embeddings

export function mockVector(input: string, dims = 4): number[] {
  const h = createHash('sha256').update(input).digest();
  return Array.from(
    { length: dims },
    (_, i) => Math.round((h.readUInt16BE(i * 2) / 65535 - 0.5) * 1e6) / 1e6,
  );
}

function renderEmbeddings(format: MockFormat, body: any, model: string, step: MockStep | undefined): unknown {
  if (format === 'gemini-embed') {
    const reqs: any[] = Array.isArray(body?.requests) ? body.requests : [];
    return {
      embeddings: reqs.map((r, i) => ({
        values: step?.embeddings?.[i] ?? mockVector(String(r?.content?.parts?.[0]?.text ?? '')),
      })),
    };
  }
  const inputs: unknown[] = Array.isArray(body?.input) ? body.input : [body?.input];
  const tokens = inputs.reduce((n: number, x) => n + (typeof x === 'string' ? words(x) : 1), 0);
  return {
    object: 'list',
    data: inputs.map((x, index) => ({
      object: 'embedding',
      index,
      embedding: encodeVector(
        step?.embeddings?.[index] ?? mockVector(JSON.stringify(x)),
        body?.encoding_format,
      ),
    })),
    model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** As OpenAI does: `encoding_format: "base64"` answers little-endian float32 bytes in base64. */
function encodeVector(v: number[], format: unknown): number[] | string {
  return format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
}

// ---------------------------------------------------------------------------------------------
// Normalised view of a recorded request (for assertions across formats)

export interface WireTurn {
  role: 'user' | 'assistant';
  text: string;
  images: { mediaType?: string; data?: string; url?: string }[];
  /** Gemini: `signature` is the functionCall part's thoughtSignature. */
  toolCalls: { id?: string; name: string; args: unknown; signature?: string }[];
  toolResults: { id?: string; name?: string; content: unknown }[];
  /**
   * Reasoning sent back in an assistant turn, in order: Anthropic thinking {text, signature} and
   * redacted_thinking {data}; Gemini thought parts {text, signature}.
   */
  reasoning: { text?: string; signature?: string; data?: string }[];
}

export interface WireView {
  format: MockFormat;
  model: string | null;
  stream: boolean;
  system: string | null;
  turns: WireTurn[];
  tools: { name: string; description?: string; parameters?: unknown }[];
  /** The credential the request carried, whichever header it used. */
  auth: { header: 'authorization' | 'x-api-key' | 'x-goog-api-key' | 'api-key'; key: string } | null;
}

const str = (x: unknown): string => (typeof x === 'string' ? x : '');
const hdr = (h: RecordedRequest['headers'], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

function newTurn(role: WireTurn['role']): WireTurn {
  return { role, text: '', images: [], toolCalls: [], toolResults: [], reasoning: [] };
}

function pushTurn(turns: WireTurn[], t: WireTurn): void {
  const last = turns[turns.length - 1];
  if (last && last.role === t.role) {
    last.text += t.text;
    last.images.push(...t.images);
    last.toolCalls.push(...t.toolCalls);
    last.toolResults.push(...t.toolResults);
    last.reasoning.push(...t.reasoning);
  } else turns.push(t);
}

function viewOpenAi(body: any, v: WireView): void {
  const system: string[] = [];
  for (const m of body?.messages ?? []) {
    const parts: any[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content ?? []);
    const text = parts.map((p) => (p.type === 'text' ? str(p.text) : '')).join('');
    if (m.role === 'system' || m.role === 'developer') {
      system.push(text);
      continue;
    }
    const t = newTurn(m.role === 'assistant' ? 'assistant' : 'user');
    if (m.role === 'tool') t.toolResults.push({ id: m.tool_call_id, content: m.content });
    else t.text = text;
    for (const p of parts) {
      if (p.type === 'image_url') {
        const url = str(p.image_url?.url);
        const d = /^data:([^;]+);base64,(.*)$/s.exec(url);
        t.images.push(d ? { mediaType: d[1], data: d[2] } : { url });
      }
    }
    for (const tc of m.tool_calls ?? []) {
      t.toolCalls.push({
        id: tc.id,
        name: tc.function?.name,
        args: JSON.parse(tc.function?.arguments || '{}'),
      });
    }
    pushTurn(v.turns, t);
  }
  v.system = system.length ? system.join('\n\n') : null;
  v.tools = (body?.tools ?? []).map((t: any) => ({
    name: t.function?.name,
    description: t.function?.description,
    parameters: t.function?.parameters,
  }));
}

function viewResponses(body: any, v: WireView): void {
  const system: string[] = typeof body?.instructions === 'string' ? [body.instructions] : [];
  const items: any[] =
    typeof body?.input === 'string' ? [{ role: 'user', content: body.input }] : (body?.input ?? []);
  for (const item of items) {
    const type = item.type ?? 'message';
    if (type === 'message') {
      const parts: any[] =
        typeof item.content === 'string'
          ? [{ type: 'input_text', text: item.content }]
          : (item.content ?? []);
      const text = parts
        .map((p) => (p.type === 'input_text' || p.type === 'output_text' ? str(p.text) : ''))
        .join('');
      if (item.role === 'system' || item.role === 'developer') {
        system.push(text);
        continue;
      }
      const t = newTurn(item.role === 'assistant' ? 'assistant' : 'user');
      t.text = text;
      for (const p of parts) {
        if (p.type !== 'input_image') continue;
        const url = str(p.image_url);
        const d = /^data:([^;]+);base64,(.*)$/s.exec(url);
        t.images.push(d ? { mediaType: d[1], data: d[2] } : { url });
      }
      pushTurn(v.turns, t);
    } else if (type === 'function_call' || type === 'custom_tool_call') {
      const t = newTurn('assistant');
      const args = type === 'function_call' ? JSON.parse(item.arguments || '{}') : item.input;
      t.toolCalls.push({ id: item.call_id, name: item.name, args });
      pushTurn(v.turns, t);
    } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      const t = newTurn('user');
      t.toolResults.push({ id: item.call_id, content: item.output });
      pushTurn(v.turns, t);
    } else if (type === 'reasoning') {
      const t = newTurn('assistant');
      const text = (item.summary ?? []).map((p: any) => str(p.text)).join('');
      t.reasoning.push({ text, ...(item.encrypted_content ? { data: item.encrypted_content } : {}) });
      pushTurn(v.turns, t);
    }
  }
  v.system = system.length ? system.join('\n\n') : null;
  // Function and custom tools by name; built-in tools (web_search, local_shell, …) by their type.
  v.tools = (body?.tools ?? []).map((t: any) => ({
    name: t.name ?? t.type,
    description: t.description,
    parameters: t.parameters,
  }));
}

function viewAnthropic(body: any, v: WireView): void {
  v.system =
    typeof body?.system === 'string'
      ? body.system
      : Array.isArray(body?.system)
        ? body.system.map((b: any) => str(b.text)).join('\n\n')
        : null;
  for (const m of body?.messages ?? []) {
    const t = newTurn(m.role === 'assistant' ? 'assistant' : 'user');
    const blocks: any[] =
      typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content ?? []);
    for (const b of blocks) {
      if (b.type === 'text') t.text += str(b.text);
      else if (b.type === 'image') {
        t.images.push(
          b.source?.type === 'base64'
            ? { mediaType: b.source.media_type, data: b.source.data }
            : { url: b.source?.url },
        );
      } else if (b.type === 'thinking') t.reasoning.push({ text: b.thinking, signature: b.signature });
      else if (b.type === 'redacted_thinking') t.reasoning.push({ data: b.data });
      else if (b.type === 'tool_use') t.toolCalls.push({ id: b.id, name: b.name, args: b.input });
      else if (b.type === 'tool_result') t.toolResults.push({ id: b.tool_use_id, content: b.content });
    }
    pushTurn(v.turns, t);
  }
  v.tools = (body?.tools ?? []).map((t: any) => ({
    name: t.name,
    description: t.description,
    parameters: t.input_schema,
  }));
}

function viewGemini(body: any, v: WireView): void {
  const sys = body?.systemInstruction?.parts;
  v.system = Array.isArray(sys) ? sys.map((p: any) => str(p.text)).join('') : null;
  for (const c of body?.contents ?? []) {
    const t = newTurn(c.role === 'model' ? 'assistant' : 'user');
    for (const p of c.parts ?? []) {
      if (p.thought) t.reasoning.push({ text: p.text, signature: p.thoughtSignature });
      else if (typeof p.text === 'string') t.text += p.text;
      else if (p.inlineData) t.images.push({ mediaType: p.inlineData.mimeType, data: p.inlineData.data });
      else if (p.fileData) t.images.push({ mediaType: p.fileData.mimeType, url: p.fileData.fileUri });
      else if (p.functionCall) {
        t.toolCalls.push({
          id: p.functionCall.id,
          name: p.functionCall.name,
          args: p.functionCall.args,
          ...(p.thoughtSignature ? { signature: p.thoughtSignature } : {}),
        });
      } else if (p.functionResponse) {
        t.toolResults.push({
          id: p.functionResponse.id,
          name: p.functionResponse.name,
          content: p.functionResponse.response,
        });
      }
    }
    pushTurn(v.turns, t);
  }
  v.tools = (body?.tools ?? []).flatMap((t: any) =>
    (t.functionDeclarations ?? []).map((f: any) => ({
      name: f.name,
      description: f.description,
      parameters: f.parameters,
    })),
  );
}

/** One normalised view of a chat request in any of the four wire formats. */
export function wireView(req: RecordedRequest): WireView {
  const v: WireView = {
    format: req.format,
    model: req.model,
    stream: req.stream,
    system: null,
    turns: [],
    tools: [],
    auth: null,
  };
  const bearer = hdr(req.headers, 'authorization');
  const xApiKey = hdr(req.headers, 'x-api-key');
  const goog = hdr(req.headers, 'x-goog-api-key');
  const azureKey = hdr(req.headers, 'api-key');
  if (bearer) v.auth = { header: 'authorization', key: bearer.replace(/^Bearer\s+/i, '') };
  else if (xApiKey) v.auth = { header: 'x-api-key', key: xApiKey };
  else if (goog) v.auth = { header: 'x-goog-api-key', key: goog };
  else if (azureKey) v.auth = { header: 'api-key', key: azureKey };
  if (req.format === 'openai-chat') viewOpenAi(req.body, v);
  else if (req.format === 'openai-responses') viewResponses(req.body, v);
  else if (req.format === 'anthropic-messages') viewAnthropic(req.body, v);
  else if (req.format === 'gemini-generate' || req.format === 'gemini-stream') viewGemini(req.body, v);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Server

/** The key a request carried: `Authorization: Bearer …`, or Anthropic's `x-api-key`. */
export function keyOf(req: RecordedRequest): string | null {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice(7);
  const key = req.headers['x-api-key'];
  return typeof key === 'string' ? key : null;
}

function matches(step: MockStep, req: RecordedRequest): boolean {
  const m = step.match;
  if (!m) return true;
  if (m.format && m.format !== req.format) return false;
  if (m.model && m.model !== req.model) return false;
  if (m.apiKey && keyOf(req) !== m.apiKey) return false;
  if (m.path) {
    if (typeof m.path === 'string' ? !req.path.endsWith(m.path) : !m.path.test(req.path)) return false;
  }
  return true;
}

function encodeEvent(e: MockStreamEvent): string | Uint8Array {
  if ('raw' in e) return e.raw;
  const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
  return `${e.event ? `event: ${e.event}\n` : ''}${data
    .split('\n')
    .map((l) => `data: ${l}`)
    .join('\n')}\n\n`;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

/** Waits `ms`, resolving false early if the client went away. */
function wait(ms: number, res: ServerResponse): Promise<boolean> {
  if (!ms) return Promise.resolve(!res.destroyed);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(t);
      resolve(false);
    };
    const t = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

const write = (res: ServerResponse, s: string | Uint8Array): Promise<void> =>
  new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.write(s, () => resolve());
  });

function commonHeaders(format: MockFormat): Record<string, string> {
  if (format.startsWith('anthropic')) return { 'request-id': rid('req_') };
  if (format.startsWith('openai')) {
    return { 'x-request-id': rid('req_'), 'openai-processing-ms': '12' };
  }
  return {};
}

export async function startMockUpstream(): Promise<MockUpstream> {
  const queue: (MockStep & { left: number })[] = [];
  const requests: RecordedRequest[] = [];
  const mock: Listing = { models: [...MOCK_MODELS], modelLimits: {} };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const u = new URL(req.url ?? '/', 'http://mock');
    let body: any = raw;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {}
    const method = req.method ?? 'GET';
    const format = formatOf(method, u.pathname, req.headers);
    const rec: RecordedRequest = {
      method,
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      headers: req.headers,
      body,
      raw,
      format,
      model: modelOf(format, u.pathname, body),
      stream: format === 'gemini-stream' || (format !== 'gemini-generate' && body?.stream === true),
    };
    requests.push(rec);

    const idx = queue.findIndex((s) => matches(s, rec));
    const step = idx >= 0 ? queue[idx] : undefined;
    if (step && --step.left <= 0) queue.splice(idx, 1);

    if (step?.delayMs && !(await wait(step.delayMs, res))) return;
    if (step?.resetBeforeHeaders) {
      req.socket.resetAndDestroy();
      return;
    }

    const listing =
      format === 'openai-models' || format === 'anthropic-models'
        ? renderModels(format, u.pathname, rec.query, mock)
        : undefined;
    const status = step?.status ?? listing?.status ?? (format === 'unknown' ? 404 : 200);
    const headers: Record<string, string> = { ...commonHeaders(format), ...step?.headers };
    const model = rec.model ?? 'unknown-model';

    let events: MockStreamEvent[] | undefined = step?.stream;
    let payload: unknown = step?.body;
    if (events === undefined && payload === undefined) {
      if (listing && status < 400) payload = listing.body;
      else if (status >= 400)
        payload = renderError(
          format,
          status,
          step?.error ??
            (format === 'unknown' ? { message: `mock: no route for ${method} ${u.pathname}` } : undefined),
        );
      else if (format === 'openai-embeddings' || format === 'gemini-embed')
        payload = renderEmbeddings(format, body, model, step);
      else if (format === 'anthropic-count-tokens')
        payload = { input_tokens: resolveReply(step?.reply, model, body).prompt };
      else if (format === 'openai-responses-input-tokens')
        payload = {
          object: 'response.input_tokens',
          input_tokens: resolveReply(step?.reply, model, body).prompt,
        };
      else if (format === 'openai-responses-compact')
        payload = renderCompaction(resolveReply(step?.reply, model, body), body);
      else {
        const r = resolveReply(step?.reply, model, body);
        if (format === 'openai-completions') {
          events = rec.stream
            ? renderTextCompletionStream(r, model, body?.stream_options?.include_usage === true)
            : undefined;
          payload = rec.stream ? undefined : renderTextCompletion(r, model);
        } else if (format === 'openai-chat') {
          events = rec.stream
            ? renderOpenAiStream(r, model, body?.stream_options?.include_usage === true)
            : undefined;
          payload = rec.stream ? undefined : renderOpenAiCompletion(r, model);
        } else if (format === 'openai-responses') {
          events = rec.stream ? renderResponsesStream(r, model, body) : undefined;
          payload = rec.stream ? undefined : renderResponsesResponse(r, model, body);
        } else if (format === 'anthropic-messages') {
          events = rec.stream ? renderAnthropicStream(r, model) : undefined;
          payload = rec.stream ? undefined : renderAnthropicMessage(r, model);
        } else if (format === 'gemini-stream') events = renderGeminiStream(r, model);
        else payload = renderGeminiResponse(r, model);
      }
    }

    if (events) {
      res.writeHead(status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
      res.flushHeaders();
      for (let i = 0; i < events.length; i++) {
        if (step?.dieAfterEvents !== undefined && i >= step.dieAfterEvents) {
          res.destroy();
          return;
        }
        if (step?.endAfterEvents !== undefined && i >= step.endAfterEvents) break;
        if (step?.stallAfterEvents !== undefined && i >= step.stallAfterEvents) {
          await new Promise<void>((resolve) => res.once('close', () => resolve()));
          return;
        }
        if (i > 0 && step?.eventDelayMs && !(await wait(step.eventDelayMs, res))) return;
        if (step?.pause?.afterEvents === i && !(await wait(step.pause.ms, res))) return;
        await write(res, encodeEvent(events[i] as MockStreamEvent));
      }
      if (step?.dieAfterEvents !== undefined && step.dieAfterEvents >= events.length) {
        res.destroy();
        return;
      }
      res.end();
      return;
    }
    const text = typeof payload === 'string' ? payload : JSON.stringify(payload ?? null);
    res.writeHead(status, {
      'content-type': typeof payload === 'string' ? 'text/plain' : 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    });
    if (step?.dieAfterEvents !== undefined) {
      // A body cut off half-way (the declared content-length is never reached).
      await write(res, text.slice(0, Math.floor(text.length / 2)));
      res.destroy();
      return;
    }
    res.end(text);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `mock crashed: ${String(err)}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    get models() {
      return mock.models;
    },
    set models(ids: string[]) {
      mock.models = ids;
    },
    get modelLimits() {
      return mock.modelLimits;
    },
    set modelLimits(limits: Listing['modelLimits'] | undefined) {
      mock.modelLimits = limits ?? {};
    },
    get modelsPageSize() {
      return mock.modelsPageSize;
    },
    set modelsPageSize(size: number | undefined) {
      mock.modelsPageSize = size;
    },
    requests,
    enqueue(...steps: MockStep[]) {
      for (const s of steps) queue.push({ ...s, left: s.times ?? 1 });
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
