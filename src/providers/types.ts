import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from '../formats/chat.js';
import type { CallSignal } from '../lib/call-abort.js';

/** Which wire format and adapter a configured provider uses. */
export type ProviderKind = 'openai' | 'anthropic' | 'google' | 'openai-compatible' | 'dev';

/** One configured upstream (from the environment or GATEHOUSE_CONFIG). */
export interface ProviderConfig {
  /** Provider id used in routing, guardrails and responses, e.g. `openai`, `anthropic`, `google-ai-studio`, `groq`. */
  slug: string;
  kind: ProviderKind;
  /** e.g. https://api.openai.com/v1, https://api.anthropic.com, https://generativelanguage.googleapis.com/v1beta */
  baseUrl: string;
  /** The operator's key; null when only BYOK credentials (or no key, e.g. a local vLLM) are used. */
  apiKey: string | null;
  /** Extra headers sent upstream (e.g. anthropic-version overrides, org ids). */
  headers?: Record<string, string>;
}

/** Per-call inputs an adapter needs besides the request. */
export interface CallContext {
  /** The key to send upstream: the operator's or a BYOK secret. Never logged. */
  apiKey: string | null;
  /** Aborted when the caller leaves or the attempt's deadline passes (an AbortSignal fits). */
  signal: CallSignal;
  /**
   * Streams: the longest silence between two chunks of the body once the headers came (a stalled
   * stream then fails with UpstreamError(0)). Unset: the upstream Agent's body timeout.
   */
  idleTimeoutMs?: number;
}

/**
 * A failed upstream call. `status` is the upstream HTTP status, or 0 for a connection error /
 * timeout before any response. `retryable` marks what the router may fall back on (429, 5xx,
 * timeouts, connection errors). Messages never contain the API key.
 */
export class UpstreamError extends Error {
  readonly status: number;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  /** The upstream's error body when it sent one (JSON-parsed if possible). */
  readonly body: unknown;

  constructor(
    status: number,
    message: string,
    opts: { retryable?: boolean; retryAfterMs?: number; body?: unknown } = {},
  ) {
    super(message);
    this.name = 'UpstreamError';
    this.status = status;
    this.retryable = opts.retryable ?? (status === 0 || status === 408 || status === 429 || status >= 500);
    this.retryAfterMs = opts.retryAfterMs;
    this.body = opts.body;
  }
}

/**
 * A provider adapter: speaks one upstream wire format, takes and returns canonical (chat) shapes.
 * `req.model` is the upstream model id. Streams resolve once the upstream accepted the request
 * (errors before the first byte reject with UpstreamError); an error mid-stream makes the iterator
 * throw UpstreamError. Streams end with a chunk carrying `usage` whenever the upstream reports it.
 */
export interface Provider {
  readonly config: ProviderConfig;
  chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse>;
  chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>>;
  /** Absent when the provider serves no embeddings. */
  embeddings?(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse>;
}
