/**
 * The canonical request/response shapes inside Gatehouse: OpenAI Chat Completions, the hub every
 * other format translates through (messages ⇄ chat ⇄ responses, and each provider's wire format).
 * Only the fields Gatehouse understands are typed. A field that changes the answer and cannot be
 * carried is refused (400); a cost or latency hint is carried where the target has an equivalent
 * and otherwise dropped and reported (`dropped`, and `droppedFields` in capabilities.ts).
 *
 * Extensions over Chat Completions, each read only by the wires that have an equivalent:
 * `cache_control` (OpenRouter-style prompt-cache breakpoints on parts, messages, tools and the
 * request), `top_k`, a tool's `origin` (how a Responses caller declared it), and `web_search`
 * (the provider's own web search; see web-search.ts).
 */

import type { SafeguardResult } from './safeguards.js';

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** A prompt-cache breakpoint: the prefix up to here may be cached (Anthropic's `cache_control`). */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

/** An image's `detail` (`original`: OpenAI's full resolution). Only OpenAI's wire reads it. */
export const IMAGE_DETAILS = ['auto', 'low', 'high', 'original'] as const;

export type ContentPart =
  | { type: 'text'; text: string; cache_control?: CacheControl }
  | {
      type: 'image_url';
      image_url: { url: string; detail?: (typeof IMAGE_DETAILS)[number] };
      cache_control?: CacheControl;
    }
  | { type: 'file'; file: FileInput; cache_control?: CacheControl }
  /** Audio for the model to hear (Chat Completions' part): base64 data in `format` (wav, mp3, …). */
  | { type: 'input_audio'; input_audio: { data: string; format: string }; cache_control?: CacheControl }
  /** A video for the model to watch (OpenRouter's part): a `data:` URL or an http(s) URL (YouTube's too). */
  | { type: 'video_url'; video_url: { url: string }; cache_control?: CacheControl };

/**
 * A document given to the model (OpenRouter's and OpenAI's `file` part; Anthropic's `document`
 * block, Responses' `input_file`): a PDF or a text file as a `data:` URL, a URL, or a provider's own
 * file id (meaningful only to that provider).
 */
export interface FileInput {
  filename?: string;
  /** `data:<media type>;base64,<data>` or an http(s) URL. */
  file_data?: string;
  file_id?: string;
}

/**
 * One piece of provider reasoning state (OpenRouter's `reasoning_details`), carried so that a
 * conversation can hand it back to the provider that produced it: Anthropic accepts thinking in
 * history only with its `signature`, Gemini only with its `thoughtSignature`. `format` names the
 * provider family the entry belongs to (see REASONING_FORMATS); entries of another family are never
 * sent upstream. `index` numbers the entries of one message; in stream deltas, fragments sharing an
 * `index` (and `type`) are pieces of one entry (texts concatenate, a later signature completes it).
 * `id` ties an entry to something else in the message (Gemini: the tool call a signature belongs to).
 */
export type ReasoningDetail =
  | {
      type: 'reasoning.text';
      text: string;
      signature?: string | null;
      format?: string;
      index?: number;
      id?: string;
    }
  | { type: 'reasoning.encrypted'; data: string; format?: string; index?: number; id?: string }
  | { type: 'reasoning.summary'; summary: string; format?: string; index?: number; id?: string };

/** The `format` values of reasoning_details entries Gatehouse produces and understands. */
export const REASONING_FORMATS = {
  anthropic: 'anthropic-claude-v1',
  google: 'google-gemini-v1',
  openaiResponses: 'openai-responses-v1',
} as const;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  content: string | ContentPart[] | null;
  name?: string;
  /** assistant messages */
  tool_calls?: ToolCall[];
  /** assistant messages: reasoning text produced by the model (OpenRouter-style field) */
  reasoning?: string | null;
  /** assistant messages: the provider's reasoning state, signatures included (see ReasoningDetail) */
  reasoning_details?: ReasoningDetail[];
  /** tool messages */
  tool_call_id?: string;
  /** A cache breakpoint at the end of this message (on a block that is not a content part). */
  cache_control?: CacheControl;
}

/**
 * How a Responses caller declared a tool the canonical request carries as a function: a `custom`
 * (freeform) tool takes one string, `input`; a tool of a `namespace` is flattened to one function
 * named `<namespace>__<name>`; `local_shell` is a function taking the exec action. The Responses
 * encoder maps the model's calls back to the item types the caller declared. Never sent upstream.
 */
export interface ToolOrigin {
  type: 'function' | 'custom' | 'local_shell' | 'tool_search';
  /** The tool's own name (inside its namespace, when it has one). */
  name: string;
  namespace?: string;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
  cache_control?: CacheControl;
  /**
   * Anthropic's fine-grained tool streaming: the tool's input streams as the model writes it, not
   * checked first (OpenRouter takes it on a chat tool; a latency hint, dropped where not carried).
   */
  eager_input_streaming?: true;
  origin?: ToolOrigin;
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean };
    };

/**
 * The caller asked the model to search the web (Anthropic's `web_search` server tool, a Responses
 * `web_search` tool, Chat Completions' `web_search_options`, OpenRouter's `openrouter:web_search`):
 * each provider wire turns it into that provider's own search tool, and drops (lists) what it has
 * no field for (HINT_RULES).
 */
export interface WebSearchRequest {
  max_uses?: number;
  allowed_domains?: string[];
  blocked_domains?: string[];
  user_location?: WebSearchLocation;
  search_context_size?: 'low' | 'medium' | 'high';
  /**
   * Internal: the Responses tool the caller asked with (`web_search`, `web_search_preview`, …,
   * `openrouter:web_search`), which a translated Responses answer echoes. No provider reads it.
   */
  origin?: string;
}

export interface WebSearchLocation {
  type: 'approximate';
  city?: string;
  region?: string;
  /** ISO 3166-1 alpha-2 */
  country?: string;
  /** IANA time zone */
  timezone?: string;
}

/** A web page the answer cites (OpenRouter's chat annotation); offsets into the message's content. */
export interface UrlCitation {
  type: 'url_citation';
  url_citation: { url: string; title: string; content?: string; start_index: number; end_index: number };
}

/**
 * A search the provider ran for the answer: its query when the provider says, and the pages it
 * found. Internal (the chat answer carries only `annotations`); the Messages and Responses answers
 * show it as their own search blocks / items.
 */
export interface WebSearchCall {
  id: string;
  query?: string;
  sources: { url: string; title?: string }[];
}

export interface ReasoningConfig {
  effort?: 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';
  max_tokens?: number;
  exclude?: boolean;
}

export interface ChatRequest {
  /** For providers: the upstream model id. At the edge: the slug the caller asked for. */
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string | string[];
  seed?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
  response_format?: ResponseFormat;
  logprobs?: boolean;
  top_logprobs?: number;
  reasoning?: ReasoningConfig;
  user?: string;
  /** Top-k sampling (Anthropic, Gemini, most open-model servers; not OpenAI). */
  top_k?: number;
  /** A breakpoint on the last cacheable block of the request (Anthropic's top-level form). */
  cache_control?: CacheControl;
  // Cost and latency hints, named as OpenAI names them; each provider wire maps what it can.
  prompt_cache_key?: string;
  prompt_cache_retention?: string;
  /** OpenAI's explicit prompt caching (`mode`: implicit/explicit breakpoints, `ttl`). */
  prompt_cache_options?: { mode?: 'implicit' | 'explicit'; ttl?: string };
  /** OpenAI's tiers (`auto`, `default`, `flex`, `scale`, `priority`). */
  service_tier?: string;
  verbosity?: 'low' | 'medium' | 'high';
  store?: boolean;
  metadata?: Record<string, string>;
  safety_identifier?: string;
  /**
   * The caller's `anthropic-beta` header (comma-separated betas), whichever format it called in:
   * sent as that header by an Anthropic-format provider, dropped and listed by any other.
   */
  anthropic_beta?: string;
  /** The provider's own web search, when the caller asked for it (see WebSearchRequest). */
  web_search?: WebSearchRequest;
  /**
   * Fields of the caller's body that the canonical request cannot carry and that only steer cost
   * or latency, as paths in the caller's format: dropped, and reported to the caller. Never sent.
   */
  dropped?: string[];
}

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

export interface Logprobs {
  content: (TopLogprob & { top_logprobs: TopLogprob[] })[] | null;
  refusal?: unknown[] | null;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number; audio_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number; audio_tokens?: number };
  /** Tools the provider ran itself and bills per use (web searches). */
  server_tool_use?: { web_search_requests?: number };
  /** Rerank searches the provider billed (Cohere's search units), each at the `request` price. */
  search_units?: number;
  /** Audio calls: the characters a speech call read out, the seconds of audio a transcription heard. */
  audio?: { characters?: number; seconds?: number };
}

export interface ChatResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: ChatMessage & {
      role: 'assistant';
      refusal?: string | null;
      /** Pages the answer cites (a web search's). */
      annotations?: UrlCitation[];
      /** The web searches the provider ran (internal: see WebSearchCall). */
      web_search_calls?: WebSearchCall[];
    };
    finish_reason: FinishReason | null;
    /** The provider's own finish reason (e.g. Anthropic's `end_turn`). */
    native_finish_reason?: string | null;
    logprobs?: Logprobs | null;
  }[];
  usage?: Usage;
  system_fingerprint?: string | null;
  /**
   * The provider's own content-filter verdicts (Azure OpenAI's filter results), added to the
   * answer's `safeguard_results`. Internal: not sent as a field of its own.
   */
  provider_safeguards?: SafeguardResult[];
}

export interface ChatChunkToolCall {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** The prompt's side of a usage: what is known of a call before its answer. */
export type PromptUsage = Pick<Usage, 'prompt_tokens' | 'prompt_tokens_details'>;

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      reasoning?: string | null;
      /** Fragments of the message's reasoning_details (merged by `index`, see ReasoningDetail). */
      reasoning_details?: ReasoningDetail[];
      tool_calls?: ChatChunkToolCall[];
      /** Citations, as OpenRouter streams them: offsets into the whole message's content. */
      annotations?: UrlCitation[];
      /** Web searches the provider ran (internal, see WebSearchCall). */
      web_search_calls?: WebSearchCall[];
    };
    finish_reason: FinishReason | null;
    native_finish_reason?: string | null;
    logprobs?: Logprobs | null;
  }[];
  /** Present on the last chunk (OpenAI sends it with empty `choices`). */
  usage?: Usage | null;
  /**
   * The prompt's token counts when the upstream tells them before the answer (Anthropic's
   * message_start, Gemini's first usageMetadata, the development provider): set by an adapter on
   * its FIRST chunk only, so a caller format that reports them up front (Anthropic's message_start)
   * can. Internal: not a field of any wire format, and not the call's usage (that is `usage`).
   */
  prompt_usage?: PromptUsage;
  /** The provider's content-filter verdicts carried by this chunk (see ChatResponse). Internal. */
  provider_safeguards?: SafeguardResult[];
}

export interface EmbeddingsRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

export interface EmbeddingsResponse {
  object: 'list';
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/**
 * A request the target format cannot express: the edge answers 400 with this message, and with
 * `details` (machine-readable, for the caller's client: `error.details` on `/messages`) when given.
 */
export class TranslationError extends Error {
  constructor(
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'TranslationError';
  }
}
