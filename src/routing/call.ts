import type { Caller } from '../accounts/caller.js';
import type { SpeechRequest, TranscriptionRequest } from '../formats/audio.js';
import type { ChatMessage, ChatRequest, EmbeddingsRequest } from '../formats/chat.js';
import type { RerankRequest } from '../formats/rerank.js';
import type { AnswerScan } from '../guardrails/answer-filter.js';
import type { SafeguardRecord, SafeguardResult } from '../guardrails/content-filters.js';
import type { CallSignal } from '../lib/call-abort.js';
import type { CallContext, ForwardedJson, ForwardRequest, NativeWire } from '../providers/types.js';
import type { TraceParent } from '../telemetry/spans.js';
import type { GenerationRow } from './accounting.js';
import type { ModelEntry, ProviderEntry } from './catalog.js';
import type { ModelKind } from './catalog-types.js';
import type { ProviderPreferences } from './preferences.js';
import type { Candidate, Credential, Exclusion } from './select.js';

/**
 * The routing engine's contracts: one call (who, what, how it takes part), the policy hooks it is
 * checked against, and what the endpoints learn about how it was served.
 */

export type EndpointName =
  | 'chat'
  /** OpenAI's legacy Completions (`POST /completions`). */
  | 'completions'
  | 'messages'
  | 'responses'
  | 'embeddings'
  | 'rerank'
  | 'speech'
  | 'transcription';

/** The canonical request of an audio call (formats/audio.ts). */
export type AudioRequest = SpeechRequest | TranscriptionRequest;

/** A caller's JSON body (an object: the routes refuse anything else). */
export type Body = Record<string, unknown>;

/**
 * One piece of text in a caller's body that content filters read: a message's text, a tool's
 * input or result, a tool description. `set` rewrites it in place (filters redact through it).
 */
export interface TextSlot {
  /** Whose text it is: `system` (system prompt, tool descriptions), `user`, `assistant`, `tool`. */
  role: 'system' | 'user' | 'assistant' | 'tool';
  text: string;
  set(text: string): void;
  /**
   * Consecutive slots with the same group (a message's content array) are one text to the
   * provider: filters match across them. Absent: the slot stands alone.
   */
  group?: object;
}

/** A text of the model's answer; `channel` marks a piece of a streamed text (one per channel). */
export type AnswerSlot = TextSlot & { channel?: string };

/**
 * What the engine needs of the caller's wire format (the inference routes' table implements it):
 * the provider-native wire that makes a call a pass-through lane, how to look at a body without
 * translating it, and how to translate it when a provider of another format serves the call.
 */
export interface CallWire<Canonical = ChatRequest | EmbeddingsRequest | RerankRequest | AudioRequest> {
  readonly endpoint: EndpointName;
  /** A provider serving this wire natively takes the body as it is (a lane). */
  readonly native: NativeWire;
  /** The catalog kind of the models this wire calls. */
  readonly kind: ModelKind;
  /**
   * Strict translation to the canonical shape; TranslationError names what it cannot carry.
   * `headers` are the caller's provider headers (a beta the translation cannot carry is listed).
   */
  parse(body: Body, headers?: Record<string, string>): Canonical;
  /** The texts content filters read and may rewrite (slots over `body` itself). */
  texts(body: Body): TextSlot[];
  /**
   * The body a lane sends upstream: the caller's, with the upstream's model id and without
   * Gatehouse's own fields (a new object; `body` is not changed).
   */
  laneBody(body: Body, upstreamModel: string): Body;
  /**
   * What a lane leaves out that was meant for a provider — of the body, or of the caller's provider
   * `headers` (reported as dropped; absent: none).
   */
  laneDropped?(body: Body, headers?: Record<string, string>): string[];
  /**
   * The audio units a body bills before any answer, for its spend reservation (speech: its
   * characters; a transcription: the most seconds its audio may hold). Absent: none.
   */
  audioUnits?(body: Body): { characters?: number; seconds?: number };
  /** The answer's texts in a lane's JSON body (filters on the response read and rewrite them). */
  answerTexts?(json: unknown): AnswerSlot[];
  /** The answer's texts in one event of a lane's stream: deltas (with a channel) and whole texts. */
  frameTexts?(json: unknown): AnswerSlot[];
}

export interface ByokChoice {
  primary: Credential[];
  fallback: Credential[];
  byokOnly: boolean;
}

/** One refusal: status 403 (policy), 402 (balance) or 429 (rate limit), naming the rule. */
export type Verdict = { ok: true } | { ok: false; status: number; message: string; retryAfterMs?: number };

/** Opens the per-call checks of a caller (its effective policy is resolved once, from cache). */
export interface CallGuard {
  /**
   * `rateLimit: false` skips the per-key request rate limit and the usage limits (batch requests
   * are limited at submission); `usageLimits: false` skips only the usage limits (media).
   */
  open(caller: Caller, opts?: { rateLimit?: boolean; usageLimits?: boolean }): Promise<CallChecks>;
}

/** The policy hooks of one call (implemented over guardrails/, credits/ and the rate limiter). */
export interface CallChecks {
  /** Whether any content filter applies (the texts are not walked otherwise). */
  readonly filtering: boolean;
  /** Rate limit and usage limits (429), the key's own spending limit and guardrail budgets (403). */
  admit(): Promise<Verdict>;
  modelAllowed(model: Pick<ModelEntry, 'id' | 'aliases'>): Verdict;
  providerAllowed(provider: ProviderEntry, model: ModelEntry): { ok: true } | { ok: false; reason: string };
  /** The workspace's disabled server tools (403 when the call names one; serverToolsOf). */
  serverToolsAllowed(tools: readonly string[]): Verdict;
  /** Only the allowed/ignored provider lists (media providers carry no ZDR or training attributes). */
  providerListed(slug: string): Verdict;
  /** Content filters: may rewrite messages (redact), refuse (block) or report (flag). */
  filter(messages: ChatMessage[]): {
    messages: ChatMessage[];
    blocked: string | null;
    results: SafeguardResult[];
    /** The results as the generation keeps them. */
    records: SafeguardRecord[];
  };
  /** Content filters on the model's answer (`apply_to` response or both); null when none applies. */
  answerScan(): AnswerScan | null;
  /** Whether the organization can pay for a call on the operator's key, or `cost` (402 otherwise). */
  balance(cost?: { usd: number; of: string }): Promise<Verdict>;
  /**
   * Reserves a billed call's worst-case cost against the key's limit and guardrail budgets (403
   * when it does not fit); the hold also reserves credits for attempts on the operator's key.
   */
  reserve(worstUsd: number): Promise<{ ok: true; hold: CallHold } | Extract<Verdict, { ok: false }>>;
}

/**
 * A call admitted before its body was read whole (engine.admitEarly: a transcription's upload is
 * checked before its bytes are consumed): the models it names and its checks, opened and admitted
 * once. The engine takes them as they are — a second admission would count the call twice against
 * the rate and usage limits.
 */
export interface EarlyAdmission {
  primary: ModelEntry;
  listed: ModelEntry[] | null;
  checks: CallChecks;
}

/** A call's spend reservation: settled with its generation, or released, once. */
export interface CallHold {
  /** Reserves the organization's credits too (402 when they do not cover the reservation). */
  credits(): Promise<Verdict>;
  settle(row: GenerationRow): void;
  release(): void;
}

export interface InferenceCall {
  caller: Caller;
  wire: CallWire;
  /** The caller's body as sent (read by lanes as it is, parsed by `wire` for translation). */
  body: Body;
  /** The model the caller asked for (as named in the body; the first of `models` without one). */
  model: string;
  /** The request's `models` (OpenRouter): tried in order once every provider of the one before failed. */
  models?: string[];
  stream: boolean;
  /** The caller's provider headers (anthropic-beta, …), already allow-listed. */
  headers: Record<string, string>;
  prefs: ProviderPreferences;
  echoUpstream: boolean;
  /** Cancelled when the caller goes away (an AbortSignal fits). */
  signal: CallSignal;
  hooks?: CallHooks;
  /** The span the call's attempt spans go under (the request's, a batch item's); absent: not traced. */
  trace?: TraceParent;
  /** The preset whose configuration the body was completed from (presets/), recorded with the generation. */
  presetId?: string;
  /** Admitted before the body was read whole (engine.admitEarly): not opened or admitted again. */
  admitted?: EarlyAdmission;
}

/** How a caller other than the HTTP endpoints (the batch worker) takes part in a call. */
export interface CallHooks {
  /** Receives the call's generation rows instead of the accountant (written with the batch result). */
  record?: (row: GenerationRow) => void;
  /** Waits for a slot of the provider before each attempt; the returned function frees it. */
  acquire?: (provider: string) => Promise<() => void>;
  /** false: the per-key request rate limit does not apply. */
  rateLimit?: boolean;
  /**
   * Stands in for every upstream call of non-streaming calls (provider-native batches: capture the
   * lane's body at submission, replay the provider's batch answer at collection). `req` is null
   * for a translated attempt.
   */
  upstream?: (
    provider: string,
    req: (ForwardRequest & { stream: false }) | null,
    ctx: CallContext,
  ) => Promise<ForwardedJson>;
}

/** What gateway_metadata and accounting need to know about how a call was served. */
export interface RouteInfo {
  generationId: string;
  requested: string;
  model: ModelEntry;
  served: Candidate;
  attempts: number;
  /** The catalog id of the model the caller named (`served.model` differs after a model fallback). */
  primaryModel: string;
  /** The models attempts were made for, in order (the serving one last). */
  modelsTried: string[];
  /** Every attempt made, in order (the serving one last). */
  tried: Tried[];
  /** Models of the list left out (guardrail, context length). */
  skippedModels: { model: string; reason: string }[];
  considered: { model: string; provider: string; selected: boolean }[];
  excluded: Exclusion[];
  startedAt: number;
  safeguards: SafeguardResult[];
  /** What the generation keeps of the checks (the request's; the answer's are added when it is recorded). */
  safeguardRecords: SafeguardRecord[];
  /** What went upstream: the lane's body, or the canonical request for the provider's adapter. */
  upstreamRequest: unknown;
  /** The caller's body after the content filters' redactions (what every attempt was made from). */
  sentBody: Body;
  strategy: string;
  /** Served on a pass-through lane (the caller's own wire) rather than translated. */
  lane: boolean;
  /** The caller's fields the translation could not carry (hints without an equivalent); [] on a lane. */
  dropped: string[];
}

/** One attempt made, as the generation lists it: which model on which provider, and how it ended. */
export interface Tried {
  model: string;
  provider: string;
  /** The upstream's HTTP status (200 for the one that served); null when none came. */
  status: number | null;
  latencyMs: number;
  isByok: boolean;
}

/** One planned attempt: an endpoint with a credential, served on a lane or translated. */
export interface Attempt {
  candidate: Candidate;
  /** The provider speaks the caller's wire: the body goes as it is (a pass-through lane). */
  lane: boolean;
}
