import type {
  SpeechAudio,
  SpeechRequest,
  TranscriptionAnswer,
  TranscriptionRequest,
} from '../formats/audio.js';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Usage,
} from '../formats/chat.js';
import type { RerankRequest, RerankResponse } from '../formats/rerank.js';
import type { CallSignal } from '../lib/call-abort.js';
import type { PresetKind, Quirk } from './presets.js';
import type { RemoteMedia } from './remote-media.js';

/** Which wire format and adapter a configured provider uses. */
export type ProviderKind =
  | 'openai'
  | 'anthropic'
  | 'google'
  | 'openai-compatible'
  | 'azure'
  | 'vertex'
  | 'bedrock'
  | 'dev';

/** One configured upstream (from the environment or GATEHOUSE_CONFIG). */
export interface ProviderConfig {
  /** Provider id used in routing, guardrails and responses, e.g. `openai`, `anthropic`, `google-ai-studio`, `groq`. */
  slug: string;
  kind: ProviderKind;
  /** e.g. https://api.openai.com/v1, https://api.anthropic.com, https://generativelanguage.googleapis.com/v1beta */
  baseUrl: string;
  /** The operator's key (the first of `keys`); null when only BYOK credentials (or no key, e.g. a local vLLM) are used. */
  apiKey: string | null;
  /** Several operator keys, each named and weighted (GATEHOUSE_CONFIG `keys`); absent: `apiKey` alone. */
  keys?: OperatorKey[];
  /** Extra headers sent upstream (e.g. anthropic-version overrides, org ids). */
  headers?: Record<string, string>;
  /** The vendor preset an `openai-compatible` provider was configured from (`kind: groq` …). */
  preset?: PresetKind;
  /** OpenAI-compatible: calls need a key (a hosted vendor's preset); unset, a keyless call is sent. */
  keyRequired?: boolean;
  /** Chat Completions fields the vendor refuses: left out of every chat body, reported as dropped. */
  rejects?: readonly Quirk[];
  /** Azure OpenAI (`kind: azure`): `baseUrl` is the resource endpoint; these say where each model goes. */
  azure?: AzureSettings;
  /** Google Vertex AI (`kind: vertex`): `baseUrl` is the regional API origin; these say where and as whom. */
  vertex?: VertexSettings;
  /** AWS Bedrock (`kind: bedrock`): `baseUrl` is the runtime endpoint; region and credentials here. */
  bedrock?: BedrockSettings;
}

/** An AWS Bedrock entry's call settings. */
export interface BedrockSettings {
  /** The AWS region the calls are signed for (`us-east-1` …). */
  region: string;
  /** Explicit credentials; absent: the AWS SDK's default provider chain (env, profiles, roles). */
  credentials?: AwsKeys;
  /** The shared-config profile the default chain reads (instead of AWS_PROFILE / `default`). */
  profile?: string;
  /** Upstream model id (or catalog model id) → Bedrock model id; unlisted models use their own id. */
  modelIds: Record<string, string>;
  /** Bedrock batch inference (native batches); absent: the entry's batches run on the worker. */
  batch?: BedrockBatchSettings;
}

/** Where Bedrock batch inference jobs read and write, and as whom (`batch_*` fields of the entry). */
export interface BedrockBatchSettings {
  /** `s3://bucket/prefix`: each batch's input and output go under `<prefix>/<batch id>/`. */
  s3Uri: string;
  /** The IAM service role Bedrock assumes to read the input and write the output. */
  roleArn: string;
  /** The control plane (`https://bedrock.{region}.amazonaws.com`, or `batch_endpoint`). */
  endpoint: string;
  /** An S3-compatible endpoint instead of AWS's (`batch_s3_endpoint`: a VPC endpoint, a test server). */
  s3Endpoint?: string;
}

/** An IAM access key (and a session token for temporary credentials). Never logged. */
export interface AwsKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A Vertex AI entry's project, region, credentials and publisher choices. */
export interface VertexSettings {
  project: string;
  /** `us-central1`, `europe-west4`, … or `global`. */
  region: string;
  /** A service account's key file (parsed JSON); absent: application default credentials. */
  serviceAccount?: ServiceAccountKey;
  /** The OAuth token endpoint when it is not Google's (Private Service Connect, a test's mock). */
  tokenUrl?: string;
  /** Model id → publisher, over the default (`claude-*` → anthropic, others → google). */
  publishers: Record<string, VertexPublisher>;
}

export type VertexPublisher = 'google' | 'anthropic';

/** The fields of a service-account key file that sign the token requests. */
export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  /** The token endpoint the key file names (Google's unless it is a private endpoint). */
  token_uri?: string;
}

/** One of a provider's operator keys. Its secret is never logged nor shown: `name` identifies it. */
export interface OperatorKey {
  name: string;
  apiKey: string | null;
  /** Its share of the provider's calls among the operator's keys. */
  weight: number;
}

/** An Azure OpenAI resource's call settings. */
export interface AzureSettings {
  /** The `api-version` query parameter of the deployment-scoped routes (chat, embeddings). */
  apiVersion: string;
  /** Upstream model id (or catalog model id) → deployment name; unlisted models use their own id. */
  deployments: Record<string, string>;
  /** Microsoft Entra ID instead of a key: a client-credentials token sent as a Bearer token. */
  entra?: EntraAuth;
}

/** An Entra ID app registration's client credentials. */
export interface EntraAuth {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** The token endpoint; default `https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token`. */
  tokenUrl?: string;
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
  /** Fetches image and document URLs for the wires that take their data inline only (Gemini, Converse). */
  media?: RemoteMedia;
  /**
   * The model's maximum output tokens at this endpoint, as the catalog knows it (absent: unknown).
   * A catalog fact, not the provider's: wires that must name a limit (Anthropic's `max_tokens`)
   * send it when the caller named none.
   */
  maxOutputTokens?: number;
}

/** A status that may pass if the same call is made again: 408, 429, 5xx, or 0 (no answer: timeout, connection). */
export const isTransientStatus = (status: number): boolean =>
  status === 0 || status === 408 || status === 429 || status >= 500;

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
    this.retryable = opts.retryable ?? isTransientStatus(status);
    this.retryAfterMs = opts.retryAfterMs;
    this.body = opts.body;
  }
}

/**
 * A caller-facing wire format that a provider may speak natively. When the caller's format is one
 * of the provider's natives, the call is a pass-through lane: the body goes upstream as sent.
 */
export type NativeWire =
  | 'openai-chat'
  /** OpenAI's legacy `POST /completions` (OpenAI-compatible servers: vLLM, llama.cpp, Ollama). */
  | 'openai-completions'
  | 'openai-responses'
  /** OpenAI's `POST /responses/compact` and `POST /responses/input_tokens`. */
  | 'openai-responses-compact'
  | 'openai-responses-input-tokens'
  | 'openai-embeddings'
  | 'anthropic-messages'
  | 'anthropic-count-tokens'
  /** OpenRouter's `POST /rerank`: no provider takes it as it is; each adapter's `rerank` translates it. */
  | 'openrouter-rerank'
  /** OpenAI's audio endpoints: no provider takes them as a lane (each adapter sends its own form). */
  | 'openai-audio';

/**
 * Which rows of the capability and hint tables (formats/capabilities.ts) say what a translated
 * request may carry: OpenAI's own API takes hints an OpenAI-compatible server does not.
 */
export type TranslationTarget = 'openai' | 'openai-compatible' | 'anthropic' | 'google';

/** What a provider declares about itself, so the engine never tests a provider's kind by name. */
export interface ProviderTraits {
  /** The caller wires served natively (pass-through lanes through `forward`). */
  natives: ReadonlySet<NativeWire>;
  /** The capability table of the canonical → provider translation; null: carries everything. */
  target: TranslationTarget | null;
  /** Calls work without any key (local OpenAI-compatible servers, the development provider). */
  keyOptional: boolean;
  /**
   * Holds Anthropic message threads itself (`thread` on /messages, passed through on its lane):
   * Anthropic's API. For a model no such provider serves, Gatehouse holds them.
   */
  holdsThreads?: boolean;
  /**
   * Hints `target`'s kind carries that this provider (for this model) has no field for: dropped,
   * and listed when the request sets them (`anthropic-beta` to a Llama on Bedrock's Converse).
   */
  drops?: readonly string[];
  /**
   * Hints `target`'s kind drops that this provider (for this model) carries: `web_search` offered
   * beside function tools, which Gemini 3 on the Gemini API runs (Vertex AI and Gemini 2 do not).
   */
  keeps?: readonly string[];
  /**
   * Capability rules (CAPABILITY_RULES fields) this provider refuses beyond those of `target`'s
   * kind: `web_search` on Bedrock's Converse, which has no search of its own; a search asked for
   * beside function tools on a Gemini model that cannot run the two together (Gemini 2, Vertex AI).
   */
  refuses?: readonly string[];
  /**
   * What a lane call leaves out of the caller's body or headers, as listed in
   * `x-gatehouse-dropped-fields` (Bedrock's InvokeModel: the beta flags Bedrock has none of).
   */
  laneDropped?(body: Record<string, unknown>, headers: Record<string, string>): string[];
  /**
   * The traits of one upstream model when they differ by model (Vertex AI serves Claude, natively
   * on /messages, and Gemini under one entry); absent: these traits hold for every model.
   */
  forModel?(upstreamModel: string): ProviderTraits;
}

/** A call on a lane: the caller's own body, to be sent as it is. */
export interface ForwardRequest {
  wire: NativeWire;
  /** The caller's body with the upstream model id and without Gatehouse's own fields. */
  body: Record<string, unknown>;
  /** The caller's provider headers (anthropic-beta, …), already allow-listed; never credentials. */
  headers: Record<string, string>;
  stream: boolean;
  /**
   * A stream may be relayed as the upstream's bytes (frames are Buffers of whole events, not one
   * event each): nothing above reads or rewrites its events one by one (no content filter on the
   * answer). Adapters without a byte relay ignore it.
   */
  bytes?: boolean;
}

/** What a lane reads of an answer on its way through (the usage tap). */
export interface Tapped {
  /** Usage as the provider reported it (canonical); null when it reported none. */
  usage: Usage | null;
  /** The provider's finish reason, when the answer is complete. */
  finishReason: string | null;
  /** The upstream's id of the answer (`msg_…`, `chatcmpl-…`, `resp_…`). */
  responseId: string | null;
  /** Characters of output seen (to estimate usage an upstream did not report). */
  outputChars: number;
}

/** A lane's whole answer (non-streaming): relayed as the provider sent it. */
export interface ForwardedJson extends Tapped {
  status: number;
  /** The body exactly as received. */
  text: string;
  /** The body parsed (read by the tap; callers may add to it instead of parsing again). */
  json: unknown;
}

/** One event of a lane's stream: the SSE frame to relay and what the tap read from it. */
export interface RelayFrame {
  /**
   * The event as SSE text, ready to write (several events' when `parts` lists them); a Buffer when
   * the stream is relayed as the upstream's bytes (`ForwardRequest.bytes`): whole events as they
   * came, one or more.
   */
  frame: string | Buffer;
  /**
   * The events of a joined frame (lane.ts joins the events of one upstream read that carry no
   * parsed `json`), each as a frame of its own: for readers that need one event at a time (the
   * content filters). The fields below are then what was read of all of them (the latest usage,
   * finish reason and id; the characters summed).
   */
  parts?: RelayFrame[];
  /** The event's data parsed, when the tap parsed it (events carrying usage always are). */
  json?: unknown;
  usage?: Usage;
  finishReason?: string;
  responseId?: string;
  outputChars?: number;
}

/**
 * A provider adapter: speaks one upstream wire format, takes and returns canonical (chat) shapes.
 * `req.model` is the upstream model id. Streams resolve once the upstream accepted the request
 * (errors before the first byte reject with UpstreamError); an error mid-stream makes the iterator
 * throw UpstreamError. Streams end with a chunk carrying `usage` whenever the upstream reports it.
 *
 * `forward` serves the pass-through lanes of `traits.natives`: the same failure contract, and a
 * stream of relay frames that ends after the upstream's last event (UpstreamError if it was cut).
 */
export interface Provider {
  readonly config: ProviderConfig;
  readonly traits: ProviderTraits;
  chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse>;
  chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>>;
  /** Absent when the provider serves no embeddings. */
  embeddings?(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse>;
  /** Absent when the provider serves no reranking. */
  rerank?(req: RerankRequest, ctx: CallContext): Promise<RerankResponse>;
  /** Text to speech (OpenAI's audio wire): resolves at the answer's headers. Absent: none served. */
  speech?(req: SpeechRequest, ctx: CallContext): Promise<SpeechAudio>;
  /** A transcription of an audio file (OpenAI's audio wire). Absent: none served. */
  transcription?(req: TranscriptionRequest, ctx: CallContext): Promise<TranscriptionAnswer>;
  /**
   * `GET /responses/{id}/input_items` at a provider that stores Responses itself (`query`: the
   * encoded query string, `?…` or empty): its JSON answer. Absent: the provider stores none.
   */
  inputItems?(responseId: string, query: string, ctx: CallContext): Promise<unknown>;
  /**
   * The prompt tokens of a canonical request, counted by the provider's own counting endpoint
   * (the input tokens of a translated call). Absent: the provider counts none; callers estimate.
   */
  countTokens?(req: ChatRequest, ctx: CallContext): Promise<number>;
  /** Absent when the provider has no natives. */
  forward?(req: ForwardRequest & { stream: false }, ctx: CallContext): Promise<ForwardedJson>;
  forwardStream?(
    req: ForwardRequest & { stream: true },
    ctx: CallContext,
  ): Promise<AsyncIterable<RelayFrame>>;
}
