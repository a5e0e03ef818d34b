import type { Caller } from '../accounts/caller.js';
import type {
  SpeechAudio,
  SpeechRequest,
  TranscriptionAnswer,
  TranscriptionRequest,
} from '../formats/audio.js';
import { droppedFields } from '../formats/capabilities.js';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Usage,
} from '../formats/chat.js';
import type { RerankRequest, RerankResponse } from '../formats/rerank.js';
import { serverToolsOf } from '../formats/web-search.js';
import type { AnswerScan } from '../guardrails/answer-filter.js';
import { providerSafeguardRecords } from '../guardrails/content-filters.js';
import type { CallSignal } from '../lib/call-abort.js';
import { ApiError, badRequest, forbidden, notFound } from '../lib/errors.js';
import { extended } from '../lib/objects.js';
import { randomHex } from '../lib/random-pool.js';
import { OPENROUTER_HISTORY, type Quirk } from '../providers/presets.js';
import { rejectedFields, withoutRejected } from '../providers/quirks.js';
import type { RemoteMedia } from '../providers/remote-media.js';
import type {
  CallContext,
  ForwardedJson,
  NativeWire,
  Provider,
  ProviderTraits,
  RelayFrame,
  TranslationTarget,
} from '../providers/types.js';
import { callServed } from '../telemetry/genai.js';
import type { TracedSpan } from '../telemetry/spans.js';
import type { GenerationRow } from './accounting.js';
import {
  blockedBy,
  blockedOutcome,
  filterAnswer,
  filterChunks,
  filterFrames,
  type WholeAnswer,
} from './answer-filter.js';
import { speechUsage, transcriptionUsage } from './audio-usage.js';
import { filterBody, promptChars } from './body-filter.js';
import type {
  Body,
  ByokChoice,
  CallChecks,
  CallGuard,
  EarlyAdmission,
  InferenceCall,
  RouteInfo,
} from './call.js';
import type { Catalog, ModelEntry } from './catalog.js';
import { findModel } from './catalog.js';
import type { ModelKind } from './catalog-types.js';
import type { CredentialGate, CredentialPlanner } from './credentials/service.js';
import type { StickyRoute } from './credentials/sticky.js';
import {
  type Attempt,
  classify,
  type Failure,
  type FallbackContext,
  modelsTried,
  openAttempt,
  type Prepared,
  type Routed,
  routeWithFallbacks,
  type Tried,
  upstreamToApiError,
} from './fallback.js';
import { plannedMetadata, storedMetadata } from './gateway-metadata.js';
import { type Meter, readChunk, readFrame, responseChars } from './metering.js';
import type { RoutingMetrics } from './metrics.js';
import { modelChain, type SkippedModel } from './model-chain.js';
import { withoutOnline } from './online.js';
import { type ParseOnce, parseOnce } from './parse-once.js';
import { admitUnpriced } from './passthrough.js';
import type { ProviderPreferences } from './preferences.js';
import { type Cost, costOf } from './pricing.js';
import { failedRow, type Outcome, servedRow } from './records.js';
import { type Candidate, type Exclusion, type SelectInput, selectCandidates } from './select.js';
import { checkUsage } from './usage-check.js';
import { DEFAULT_RESERVED_OUTPUT_TOKENS, worstCaseUsd } from './worst-case.js';

/** What the engine needs from the rest of Gatehouse; wired in services.ts. */
export interface EngineDeps {
  catalog: Catalog;
  provider: (slug: string) => Provider;
  /** Guardrails, limits, budgets, balance, content filters and rate limits for one call. */
  guard: CallGuard;
  byok: (caller: Caller, providerSlug: string, modelId: string) => Promise<ByokChoice>;
  /** Capability check per translation target; throws TranslationError with the field it cannot carry. */
  assertTranslatable: (req: ChatRequest, target: TranslationTarget, refuses?: readonly string[]) => void;
  /** Fetches image and document URLs for the providers that take their data inline only. */
  remoteMedia?: RemoteMedia;
  /** Records a generation; a promise is awaited before the call's answer goes out (the journal). */
  record: (row: GenerationRow) => void | Promise<void>;
  metrics: RoutingMetrics;
  newGenerationId: () => string;
  /** Deadline of an attempt until it answers (a stream: its headers). */
  upstreamTimeoutMs: number;
  /** A stream's longest silence between two chunks once it started (and relayed audio's). */
  streamIdleTimeoutMs: number;
  /** Longest Retry-After the engine waits before retrying the last candidate once. */
  maxRetryWaitMs: number;
  /** Output tokens reserved for a call that names no maximum (see worst-case.ts). */
  reservedOutputTokens?: number;
  /** Weighted choice, circuit breakers and sticky routes of credentials (absent: tried as listed). */
  credentials?: CredentialGate & CredentialPlanner;
}

/** What of a call its early admission reads (admitEarly): who calls, the models, the preferences. */
export type EarlyCall = Pick<InferenceCall, 'caller' | 'wire' | 'model' | 'models' | 'prefs' | 'hooks'>;

/** A model kind as a refusal names it ("Model x is a rerank model"). */
const KIND_NAMES: Record<ModelKind, string> = {
  chat: 'a chat',
  embeddings: 'an embeddings',
  rerank: 'a rerank',
  speech: 'a speech',
  transcription: 'a transcription',
};

/**
 * The adapter method a translated call of each non-chat kind runs: a provider without it is left
 * out when the call is planned (the next provider serves it, or a 400 names what is missing).
 */
const ADAPTER_METHODS: Partial<
  Record<ModelKind, { method: 'embeddings' | 'rerank' | 'speech' | 'transcription'; serves: string }>
> = {
  embeddings: { method: 'embeddings', serves: 'embeddings' },
  rerank: { method: 'rerank', serves: 'reranking' },
  speech: { method: 'speech', serves: 'speech' },
  transcription: { method: 'transcription', serves: 'transcriptions' },
};

/**
 * The refusal of a model no endpoint is left of for the caller: 403 when policy excluded some,
 * 400 when none satisfies the request (or none is configured).
 */
function noProvider(model: ModelEntry, excluded: Exclusion[]): ApiError {
  const reasons = excluded.map((e) => `${e.provider}: ${e.reason}`).join('; ');
  if (excluded.some((e) => e.reason.startsWith('Provider')))
    return forbidden(`No allowed provider for ${model.id}: ${reasons}`);
  return badRequest(`No provider for ${model.id} satisfies the request: ${reasons || 'none configured'}`);
}

/** A generation id: `gen-<ms since epoch>-<20 random hex digits>`. */
export const newGenerationId = (): string => `gen-${Date.now()}-${randomHex(10)}`;

/** Rough token estimate (4 characters a token) for calls whose upstream reported no usage. */
export const estimateTokens = (chars: number): number => Math.ceil(chars / 4);

/** A served call's usage and cost. */
export interface Served {
  info: RouteInfo;
  usage: Usage;
  cost: Cost;
}

/**
 * A non-streaming call's answer: the provider's own body on a lane (relayed as it came), or the
 * canonical answer of a translated call (encoded in the caller's format by its route).
 */
export type Completed<R> = Served & ({ lane: true; forwarded: ForwardedJson } | { lane: false; response: R });

/** A streaming call's answer, once an upstream accepted it; `final` is known once it ended. */
export type Streaming = {
  info: RouteInfo;
  /** Usage and cost once the stream is over (for the caller-format encoders' final event). */
  final: () => { usage: Usage; cost: Cost } | null;
} & ({ lane: true; frames: AsyncIterable<RelayFrame> } | { lane: false; chunks: AsyncIterable<ChatChunk> });

/** A lane's answer (as opposed to an adapter's translated one). */
const isForwarded = (x: unknown): x is ForwardedJson =>
  typeof x === 'object' && x !== null && 'text' in x && 'json' in x;

/** A provider's traits for one of its upstream models (they may differ by model: Vertex AI). */
const traitsOf = (p: Provider, upstreamModel: string): ProviderTraits =>
  p.traits.forModel?.(upstreamModel) ?? p.traits;

/** A provider that takes `native` bodies for `upstreamModel` as they are (a lane). */
const speaks = (p: Provider, native: NativeWire, upstreamModel: string): boolean =>
  traitsOf(p, upstreamModel).natives.has(native) && p.forward !== undefined;

/**
 * The routing engine: a library used by the HTTP endpoints, batches and interns. It resolves the
 * model, enforces the caller's policy (limits, budgets, content filters on the caller's own body),
 * plans the attempts — a pass-through lane where the provider speaks the caller's wire, a
 * translation where it does not — runs them with fallbacks and retries, and records a generation
 * for every call (successful, failed or cut short).
 */
export class Engine {
  private readonly latencyEwma = new Map<string, number>();
  /** Completion tokens per second per provider (EWMA over measured calls), for sort=throughput. */
  private readonly throughputEwma = new Map<string, number>();
  /** Streams being relayed now, and who waits for there to be none (`drain`). */
  private streaming = 0;
  private readonly drained: (() => void)[] = [];

  /** What the fallback loop needs, built once (not spread from `deps` on every call). */
  private readonly fallback: FallbackContext;
  /** The order of a provider's credentials (weighted), bound once. */
  private readonly arrange: SelectInput['arrange'];

  constructor(private readonly deps: EngineDeps) {
    this.fallback = {
      metrics: deps.metrics,
      upstreamTimeoutMs: deps.upstreamTimeoutMs,
      maxRetryWaitMs: deps.maxRetryWaitMs,
      latency: this.latencyEwma,
      credentials: deps.credentials,
      onExhausted: (call, prep, last, attempts, startedAt, tried) =>
        this.recordFailure(call, prep, last, attempts, startedAt, tried),
      onCancelled: (call, prep, c, attempts, startedAt, tried) =>
        this.recordCancelled(call, prep, c, attempts, startedAt, tried),
    };
    const planner = deps.credentials;
    this.arrange = planner ? (tier, prefer) => planner.arrange(tier, prefer) : undefined;
  }

  /** A relayed answer ended: a drain waiting for the last one is let go. */
  private streamEnded(): void {
    if (--this.streaming === 0) for (const done of this.drained.splice(0)) done();
  }

  /** The catalog model a request names, or 404. */
  model(requested: string, kind: ModelKind): ModelEntry {
    const model = findModel(this.deps.catalog, requested);
    if (!model) throw notFound(`Model ${requested}`);
    admitUnpriced(this.deps.catalog, model, this.deps.metrics.unpricedCalls);
    if (model.kind !== kind) throw badRequest(`Model ${model.id} is ${KIND_NAMES[model.kind]} model`);
    return model;
  }

  // -------------------------------------------------------------------------------------------
  // Preparing a call

  /**
   * Checks and plans a call; a billed one (`reserve`) also reserves its worst-case cost against
   * the key's limit and budgets — last, so that nothing after it can fail and leak the hold.
   */
  private async prepare(call: InferenceCall, reserve = true): Promise<Prepared> {
    const { primary, listed, checks } = call.admitted ?? (await this.admission(call));
    // Read from the caller's body: a lane forwards it as it is, so this is the last check before.
    // An embeddings call runs no tool, whatever its body names.
    const tools = checks.serverToolsAllowed(call.wire.kind === 'chat' ? serverToolsOf(call.body) : []);
    if (!tools.ok) throw new ApiError(tools.status, tools.message);
    // Guardrail and context length per model of the list (the caller's body as sent sizes it).
    const sentChars = promptChars(call, call);
    const chain = modelChain({
      primary,
      listed,
      lookup: this.lookup(call.wire.kind),
      allowed: (m) => checks.modelAllowed(m),
      promptTokens: estimateTokens(sentChars),
    });
    const { body, safeguards, records } = filterBody(call, checks);
    const { skipped, attempts, excluded, canonical } = await this.plan(call, chain.models, body, checks);
    const strategy = call.prefs.sort ? `sort:${call.prefs.sort}` : call.prefs.order ? 'order' : 'default';
    const model = (attempts[0] as Attempt).candidate.model;
    // Every member named, no spread: keys after a spread give the object a hidden class per call
    // (lib/objects.ts), and every step of the call reads it.
    const prep: Prepared = {
      model,
      models: chain.models,
      skippedModels: [...chain.skipped, ...skipped],
      primaryModel: primary.id,
      body,
      canonical,
      attempts,
      excluded,
      safeguards,
      safeguardRecords: records,
      strategy,
      checks,
    };
    if (!reserve) return prep;
    // Every attempt's endpoint, across the models of the list: the dearest model that may serve
    // the call prices the reservation (a fallback must not overspend what the primary reserved).
    const worst = worstCaseUsd(
      attempts.map((a) => a.candidate.endpoint),
      {
        body,
        // The body as filtered (a redaction changes its size); walked again only then.
        promptTokens: estimateTokens(body === call.body ? sentChars : promptChars(call, prep)),
        kind: call.wire.kind,
        defaultOutput: this.deps.reservedOutputTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS,
        audio: call.wire.audioUnits?.(body),
      },
    );
    const reserved = await checks.reserve(worst);
    if (!reserved.ok)
      throw new ApiError(
        reserved.status,
        reserved.message,
        reserved.retryAfterMs ? { retry_after_ms: reserved.retryAfterMs } : undefined,
      );
    prep.hold = reserved.hold;
    return prep;
  }

  /**
   * The first checks of a call, which read nothing of its body but the models it names: who calls
   * (a management key: 403), the models (404, or 400 for another kind), then its admission — the
   * key's rate and usage limits (429), its own limit and guardrail budgets (403).
   */
  private async admission(call: EarlyCall): Promise<EarlyAdmission> {
    const { caller } = call;
    if (caller.isManagement)
      throw forbidden('Management keys cannot call inference endpoints; use an API key');
    const primary = this.model(call.model, call.wire.kind);
    const listed = call.models?.map((id) => this.model(id, call.wire.kind)) ?? null;
    const checks = await this.deps.guard.open(caller, { rateLimit: call.hooks?.rateLimit !== false });
    const admitted = await checks.admit();
    if (!admitted.ok)
      throw new ApiError(
        admitted.status,
        admitted.message,
        admitted.retryAfterMs ? { retry_after_ms: admitted.retryAfterMs } : undefined,
      );
    return { primary, listed, checks };
  }

  /** A model of the catalog by id or alias, when it is of `kind` (a model list's fallbacks). */
  private lookup(kind: ModelKind): (id: string) => ModelEntry | undefined {
    return (id) => {
      const m = findModel(this.deps.catalog, id);
      return m?.kind === kind ? m : undefined;
    };
  }

  /**
   * Admits a call before its body is read whole (a transcription's upload: audio.routes.ts), with
   * the refusals it would get once read, from what needs nothing of the body but the models and
   * provider preferences it names: those of `admission`, then the guardrail on the models (403),
   * no allowed provider (403), and no credits when only the operator's keys could serve it (402).
   * The call then carries the result (`call.admitted`): nothing is opened or counted twice. What
   * needs the body (content filters, the reservation sized by it) is checked when it is served.
   */
  async admitEarly(call: EarlyCall): Promise<EarlyAdmission> {
    const early = await this.admission(call);
    const { checks } = early;
    const chain = modelChain({
      primary: early.primary,
      listed: early.listed,
      lookup: this.lookup(call.wire.kind),
      allowed: (m) => checks.modelAllowed(m),
      // Nothing of the prompt is read yet: no model is passed over for its context length here.
      promptTokens: 0,
    });
    // As planning refuses: when no model has an endpoint left, the first one's refusal.
    let refusal: ApiError | null = null;
    let servable = false;
    let byok = false;
    for (const model of chain.models) {
      const { candidates, excluded } = await this.candidates(call.caller, model, null, call.prefs, checks);
      if (candidates.length === 0) refusal ??= noProvider(model, excluded);
      servable ||= candidates.length > 0;
      byok ||= candidates.some((c) => c.credential.isByok);
    }
    if (!servable) throw refusal as ApiError;
    // Every attempt on the operator's key: each would be refused its credits (fallback.ts, pay).
    if (!byok) {
      const paid = await checks.balance();
      if (!paid.ok) throw new ApiError(paid.status, paid.message);
    }
    return early;
  }

  /** Runs `serve` on a prepared call; the reservation is released if it fails (settled otherwise). */
  private async held<T>(prep: Prepared, serve: () => Promise<T>): Promise<T> {
    try {
      return await serve();
    } catch (err) {
      prep.hold?.release();
      throw err;
    }
  }

  /** Writes a generation row, then settles the call's reservation with it (same turn). */
  private write(call: InferenceCall, prep: Prepared | null, row: GenerationRow): void | Promise<void> {
    const written = (call.hooks?.record ?? this.deps.record)(row);
    prep?.hold?.settle(row);
    return written;
  }

  /**
   * The attempts that may serve the call, in try order: those of each model of the list in turn.
   * Refused as the first model's planning is when no model has any attempt.
   */
  private async plan(
    call: InferenceCall,
    models: ModelEntry[],
    body: Body,
    checks: CallChecks,
  ): Promise<{ attempts: Attempt[]; excluded: Exclusion[]; skipped: SkippedModel[]; canonical: unknown }> {
    const parse = parseOnce(call, body);
    const attempts: Attempt[] = [];
    const excluded: Exclusion[] = [];
    const skipped: SkippedModel[] = [];
    let firstRefusal: unknown = null;
    for (const model of models) {
      try {
        const planned = await this.planModel(call, model, parse, checks);
        attempts.push(...planned.attempts);
        excluded.push(...planned.excluded);
      } catch (err) {
        // A fallback model no provider can serve is passed over; the first model's refusal stands.
        if (!(err instanceof ApiError) || models.length === 1) throw err;
        firstRefusal ??= err;
        skipped.push({ model: model.id, reason: err.message });
      }
    }
    if (attempts.length === 0) throw firstRefusal;
    return { attempts, excluded, skipped, canonical: parse.canonical() };
  }

  /**
   * The attempts that may serve `model` for this caller, in try order, each with its credential:
   * a lane where the provider speaks the caller's wire, else a translation of the body (parsed once,
   * only when some attempt needs it). 403 when policy leaves none, 400 when the request's needs or
   * its translation leave none.
   */
  private async planModel(
    call: InferenceCall,
    model: ModelEntry,
    parse: ParseOnce,
    checks: CallChecks,
  ): Promise<{ attempts: Attempt[]; excluded: Exclusion[] }> {
    const { wire, prefs } = call;
    const chatRequest = () =>
      wire.kind === 'chat' ? (parse.parsed() as ChatRequest | undefined) : undefined;
    const { candidates, excluded } = await this.candidates(
      call.caller,
      model,
      prefs.require_parameters ? (chatRequest() ?? null) : null,
      prefs,
      checks,
      () => this.deps.credentials?.preferred(call, model),
    );

    const attempts: Attempt[] = [];
    // The last refusal is the caller's 400 when no candidate is left.
    const refusals: ApiError[] = [];
    const refuse = (c: Candidate, reason: string, details?: Record<string, unknown>) => {
      refusals.push(badRequest(reason, details && { details }));
      excluded.push({ provider: c.endpoint.provider, reason });
    };
    for (const candidate of candidates) {
      const provider = this.deps.provider(candidate.endpoint.provider);
      const upstreamModel = candidate.endpoint.upstreamModel;
      if (speaks(provider, wire.native, upstreamModel)) {
        attempts.push({ candidate, lane: true });
        continue;
      }
      const needs = ADAPTER_METHODS[wire.kind];
      if (needs && !provider[needs.method]) {
        refuse(candidate, `${candidate.endpoint.provider} serves no ${needs.serves}`);
        continue;
      }
      const req = parse.parsed();
      if (req === undefined) {
        const why = parse.error();
        refuse(candidate, why?.message ?? 'the request cannot be translated', why?.details);
        continue;
      }
      const traits = traitsOf(provider, upstreamModel);
      const target = traits.target;
      if (wire.kind === 'chat' && target) {
        try {
          this.deps.assertTranslatable(req as ChatRequest, target, traits.refuses);
        } catch (err) {
          refuse(candidate, (err as Error).message);
          continue;
        }
      }
      attempts.push({ candidate, lane: false });
    }
    if (attempts.length === 0) throw refusals.at(-1) ?? noProvider(model, excluded);
    return { attempts, excluded };
  }

  /** The endpoints of `model` the caller's policy and preferences allow, with their credentials. */
  private async candidates(
    caller: Caller,
    model: ModelEntry,
    request: ChatRequest | null,
    prefs: ProviderPreferences,
    checks: CallChecks,
    sticky?: () => StickyRoute | undefined,
  ): Promise<{ candidates: Candidate[]; excluded: Exclusion[] }> {
    const byokCache = new Map<string, ByokChoice>();
    for (const e of model.endpoints)
      if (this.deps.catalog.providers.get(e.provider)?.byok)
        byokCache.set(e.provider, await this.deps.byok(caller, e.provider, model.id));
    return selectCandidates({
      catalog: this.deps.catalog,
      model,
      request,
      prefs,
      providerAllowed: (p, m) => checks.providerAllowed(p, m),
      byok: (slug) => byokCache.get(slug) ?? { primary: [], fallback: [], byokOnly: false },
      latency: (slug) => this.latencyEwma.get(slug) ?? 0,
      throughput: (slug) => this.throughputEwma.get(slug),
      keyOptional: (slug) => this.deps.provider(slug).traits.keyOptional,
      arrange: this.arrange,
      sticky,
    });
  }

  /** Whether a provider of `model` takes `native` bodies as they are (a pass-through lane). */
  servesNatively(model: ModelEntry, native: NativeWire): boolean {
    return model.endpoints.some(
      (e) =>
        this.deps.catalog.providers.has(e.provider) &&
        speaks(this.deps.provider(e.provider), native, e.upstreamModel),
    );
  }

  /**
   * Whether a provider of the model `requested` names holds Anthropic message threads itself (then
   * `thread` is passed through to it); true for a model the catalog lacks, which the call refuses.
   */
  upstreamHoldsThreads(requested: string): boolean {
    const model = findModel(this.deps.catalog, requested);
    if (!model) return true;
    return model.endpoints.some((e) => {
      if (!this.deps.catalog.providers.has(e.provider)) return false;
      const p = this.deps.provider(e.provider);
      return (
        traitsOf(p, e.upstreamModel).holdsThreads === true && speaks(p, 'anthropic-messages', e.upstreamModel)
      );
    });
  }

  /**
   * Admission of a batch before it is accepted: the caller's key limits and budgets, the guardrail
   * on the model and on the providers (`prefs.only` included), without counting a request against
   * the per-key rate limit. Returns the model and the endpoints in try order (the first one prices
   * the batch's cost estimate).
   */
  async admitBatch(
    caller: Caller,
    modelSlug: string,
    kind: ModelKind,
    prefs: ProviderPreferences,
  ): Promise<{ model: ModelEntry; candidates: Candidate[] }> {
    if (caller.isManagement) throw forbidden('Management keys cannot create batches; use an API key');
    const model = this.model(modelSlug, kind);
    const checks = await this.deps.guard.open(caller, { rateLimit: false });
    for (const verdict of [await checks.admit(), checks.modelAllowed(model)]) {
      if (!verdict.ok) throw new ApiError(verdict.status, verdict.message);
    }
    const { candidates, excluded } = await this.candidates(caller, model, null, prefs, checks);
    if (candidates.length === 0) throw noProvider(model, excluded);
    return { model, candidates };
  }

  // -------------------------------------------------------------------------------------------
  // Serving a call

  /** What an attempt sends upstream: the lane's body, or the translated request for the adapter. */
  private upstreamRequest(call: InferenceCall, prep: Prepared, a: Attempt): unknown {
    const upstreamModel = a.candidate.endpoint.upstreamModel;
    const sent = this.unfiltered(call, prep, a.lane, upstreamModel);
    const rejects = this.rejects(call, a.candidate.endpoint.provider, a.lane);
    return rejects.length ? withoutRejected(sent, rejects, upstreamModel) : sent;
  }

  /** The lane's body or the translated request, before the vendor's refused fields are taken out. */
  private unfiltered(call: InferenceCall, prep: Prepared, lane: boolean, upstreamModel: string): Body {
    if (lane) return call.wire.laneBody(prep.body, upstreamModel);
    return { ...(prep.canonical as object), model: upstreamModel };
  }

  /**
   * The Chat Completions fields a provider's vendor refuses (vendor presets), and on a Chat
   * Completions lane OpenRouter's reasoning in the history, unless the provider is OpenRouter
   * itself (translations carry it their own way); none off chat wires.
   */
  private rejects(call: InferenceCall, provider: string, lane: boolean): readonly Quirk[] {
    if (call.wire.kind !== 'chat') return [];
    const config = this.deps.catalog.providers.get(provider)?.config;
    const vendor = config?.rejects ?? [];
    if (!lane || call.wire.native !== 'openai-chat' || config?.preset === 'openrouter') return vendor;
    return vendor.length ? [...vendor, ...OPENROUTER_HISTORY] : OPENROUTER_HISTORY;
  }

  /** What the served attempt left out because its vendor refuses it (reported as dropped). */
  private rejected(call: InferenceCall, prep: Prepared, served: Attempt): string[] {
    const { provider, upstreamModel } = served.candidate.endpoint;
    const rejects = this.rejects(call, provider, served.lane);
    if (!rejects.length) return [];
    // The history's reasoning alone: the lane keeps the messages' own fields as the caller sent
    // them, so the caller's body tells, without building the lane's body a second time.
    const body =
      rejects === OPENROUTER_HISTORY ? prep.body : this.unfiltered(call, prep, served.lane, upstreamModel);
    return rejectedFields(body, rejects, upstreamModel);
  }

  private ctx(a: Attempt, signal: CallSignal, stream: boolean): CallContext {
    const maxOutput = a.candidate.endpoint.maxCompletionTokens;
    return {
      apiKey: a.candidate.credential.apiKey,
      signal,
      media: this.deps.remoteMedia,
      ...(stream ? { idleTimeoutMs: this.deps.streamIdleTimeoutMs } : {}),
      ...(maxOutput ? { maxOutputTokens: maxOutput } : {}),
    };
  }

  private info(call: InferenceCall, prep: Prepared, routed: Routed<unknown>, sent: unknown): RouteInfo {
    const served = routed.served.candidate;
    const traits = traitsOf(this.deps.provider(served.endpoint.provider), served.endpoint.upstreamModel);
    const target = traits.target ?? 'dev';
    return {
      generationId: this.deps.newGenerationId(),
      requested: call.model,
      // The model that served: another than the one named after a model fallback.
      model: served.model,
      served,
      attempts: routed.attempts,
      primaryModel: prep.primaryModel,
      modelsTried: modelsTried(routed.tried),
      tried: routed.tried,
      skippedModels: prep.skippedModels,
      considered: prep.models.flatMap((m) =>
        m.endpoints.map((e) => ({
          model: m.id,
          provider: e.provider,
          selected: m.id === served.model.id && e.provider === served.endpoint.provider,
        })),
      ),
      excluded: prep.excluded,
      startedAt: routed.startedAt,
      safeguards: prep.safeguards,
      safeguardRecords: prep.safeguardRecords,
      upstreamRequest: sent,
      sentBody: prep.body,
      strategy: prep.strategy,
      lane: routed.served.lane,
      // A lane sends every field; a translation lists the hints its target has no equivalent for;
      // either leaves out what the provider's vendor refuses.
      dropped: [
        ...new Set([
          ...(routed.served.lane
            ? [
                ...(call.wire.laneDropped?.(prep.body, call.headers) ?? []),
                ...(traits.laneDropped?.(prep.body, call.headers) ?? []),
              ]
            : call.wire.kind === 'chat'
              ? droppedFields(sent as ChatRequest, target, traits.drops, traits.keeps)
              : []),
          ...this.rejected(call, prep, routed.served),
        ]),
      ],
    };
  }

  /**
   * Runs a non-streaming call through the fallback loop: a lane's attempt forwards the caller's
   * body, a translated one calls `translated` with the adapter and the translated request.
   */
  private async whole<R>(
    call: InferenceCall,
    prep: Prepared,
    translated: (provider: Provider, sent: unknown, ctx: CallContext, a: Attempt) => Promise<R>,
  ): Promise<{ result: ForwardedJson | R; info: RouteInfo; span: TracedSpan | null }> {
    let sent: unknown;
    const routed = await routeWithFallbacks<ForwardedJson | R>(this.fallback, call, prep, (a, signal) => {
      const provider = this.deps.provider(a.candidate.endpoint.provider);
      sent = this.upstreamRequest(call, prep, a);
      const ctx = this.ctx(a, signal, false);
      const req = {
        wire: call.wire.native,
        body: sent as Body,
        headers: call.headers,
        stream: false as const,
      };
      const upstream = call.hooks?.upstream;
      if (upstream) return upstream(a.candidate.endpoint.provider, a.lane ? req : null, ctx);
      if (!a.lane) return translated(provider, sent, ctx, a);
      return (provider.forward as NonNullable<Provider['forward']>)(req, ctx);
    });
    return { result: routed.result, info: this.info(call, prep, routed, sent), span: routed.span };
  }

  /**
   * A non-streaming chat call (chat, messages or responses wire), its answer through `scan` (the
   * content filters that apply to responses) when there is one.
   */
  private async completePrepared(
    call: InferenceCall,
    prep: Prepared,
    scan: AnswerScan | null,
  ): Promise<Completed<ChatResponse>> {
    const { result, info, span } = await this.held(prep, () =>
      this.whole(call, prep, (provider, sent, ctx) =>
        provider.chat(extended(sent as ChatRequest, { stream: false }), ctx),
      ),
    );
    if (isForwarded(result))
      return this.served(
        call,
        prep,
        info,
        { lane: true, forwarded: result },
        result.usage,
        result.outputChars,
        result.finishReason,
        scan,
        span,
      );
    const finish = result.choices[0]?.finish_reason ?? null;
    return this.served(
      call,
      prep,
      info,
      { lane: false, response: result },
      result.usage ?? null,
      responseChars(result),
      finish,
      scan,
      span,
    );
  }

  /** A non-streaming chat call, its answer through the content filters that apply to responses. */
  async complete(call: InferenceCall): Promise<Completed<ChatResponse>> {
    call = withoutOnline(call, this.deps.catalog);
    const prep = await this.prepare(call);
    return this.completePrepared(call, prep, prep.checks.answerScan());
  }

  /** An embeddings call (content filters apply to string inputs). */
  async embed(call: InferenceCall): Promise<Completed<EmbeddingsResponse>> {
    const prep = await this.prepare(call);
    const { result, info, span } = await this.held(prep, () =>
      // Planning left out the providers without one (ADAPTER_METHODS).
      this.whole(call, prep, (provider, sent, ctx) =>
        (provider.embeddings as NonNullable<Provider['embeddings']>)(sent as EmbeddingsRequest, ctx),
      ),
    );
    return this.servedWhole(call, prep, { result, info, span }, (r) => ({
      prompt_tokens: r.usage.prompt_tokens,
      completion_tokens: 0,
      total_tokens: r.usage.total_tokens,
    }));
  }

  /**
   * A rerank call (content filters apply to the query and the text documents). Always translated:
   * the adapter's `rerank` speaks its upstream's rerank API.
   */
  async rerank(call: InferenceCall): Promise<Completed<RerankResponse>> {
    const prep = await this.prepare(call);
    const { result, info, span } = await this.held(prep, () =>
      // Planning left out the providers without one (ADAPTER_METHODS).
      this.whole(call, prep, (provider, sent, ctx) =>
        (provider.rerank as NonNullable<Provider['rerank']>)(sent as RerankRequest, ctx),
      ),
    );
    return this.servedWhole(call, prep, { result, info, span }, (r): Usage | null => {
      const { total_tokens, search_units } = r.usage;
      // Cohere reports only search units (what it bills): the tokens are then the texts' estimate.
      const tokens =
        total_tokens ?? (search_units !== undefined ? estimateTokens(promptChars(call, prep)) : null);
      if (tokens === null) return null;
      return {
        prompt_tokens: tokens,
        completion_tokens: 0,
        total_tokens: tokens,
        ...(search_units !== undefined ? { search_units } : {}),
      };
    });
  }

  /**
   * A whole answer with no text of its own to scan (embeddings, rerank): a lane's priced by the
   * usage its tap read, an adapter's by `usageOf` (null: estimated).
   */
  private servedWhole<R>(
    call: InferenceCall,
    prep: Prepared,
    held: { result: ForwardedJson | R; info: RouteInfo; span: TracedSpan | null },
    usageOf: (response: R) => Usage | null,
  ): Promise<Completed<R>> {
    const { result, info, span } = held;
    if (isForwarded(result))
      return this.served(
        call,
        prep,
        info,
        { lane: true, forwarded: result },
        result.usage,
        0,
        null,
        null,
        span,
      );
    return this.served(
      call,
      prep,
      info,
      { lane: false, response: result },
      usageOf(result),
      0,
      null,
      null,
      span,
    );
  }

  /**
   * Prices and records a whole answer (its usage estimated when the upstream reported none). A
   * chat answer goes through `scan` first, so that the generation keeps what the answer's filters
   * did; one they block is billed (the provider did the work), recorded as refused, then refused.
   */
  private async served<R>(
    call: InferenceCall,
    prep: Prepared,
    info: RouteInfo,
    raw: { lane: true; forwarded: ForwardedJson } | { lane: false; response: R },
    reported: Usage | null,
    outputChars: number,
    finishReason: string | null,
    scan: AnswerScan | null,
    span: TracedSpan | null,
  ): Promise<Completed<R>> {
    const checked =
      reported && this.checked(info, reported, () => this.estimate(call, prep, outputChars, false));
    const usage = checked?.usage ?? this.estimate(call, prep, outputChars, false);
    const cost = costOf(info.served.endpoint.pricing, usage);
    // Only chat answers meet a scan (complete()); embeddings never do.
    const answer = scan ? (filterAnswer(call.wire, scan, raw as WholeAnswer) as typeof raw) : raw;
    const provider = answer.lane ? undefined : (answer.response as ChatResponse).provider_safeguards;
    if (scan || provider)
      info = {
        ...info,
        safeguards: scan ? [...info.safeguards, ...scan.results()] : info.safeguards,
        safeguardRecords: [
          ...info.safeguardRecords,
          ...(scan?.records() ?? []),
          ...providerSafeguardRecords(provider ?? []),
        ],
      };
    await this.recordSuccess(call, prep, info, usage, cost, {
      streamed: false,
      finishReason,
      estimated: !checked || checked.invalid !== null,
      error: checked?.invalid ?? null,
      upstreamId: answer.lane ? answer.forwarded.responseId : null,
      ...(scan?.blocked ? blockedOutcome(scan) : {}),
    });
    if (span) {
      const body = (answer.lane ? answer.forwarded.json : answer.response) as { model?: unknown } | null;
      callServed(span, call.trace, info, usage, cost, {
        finishReason,
        responseModel: body?.model,
        responseId: answer.lane ? answer.forwarded.responseId : null,
      });
    }
    if (scan?.blocked) throw blockedBy(scan);
    return extended(answer, { info, usage, cost });
  }

  /**
   * A streaming chat call. Resolves once an upstream accepted the stream (earlier failures fall
   * back like non-streaming calls); the returned iterator records the generation when it ends,
   * including when the upstream dies mid-way (partial usage, estimated when not reported) or
   * the caller goes away.
   */
  async stream(call: InferenceCall): Promise<Streaming> {
    call = withoutOnline(call, this.deps.catalog);
    const prep = await this.prepare(call);
    return this.streamPrepared(call, prep, prep.checks.answerScan());
  }

  private async streamPrepared(
    call: InferenceCall,
    prep: Prepared,
    scan: AnswerScan | null,
  ): Promise<Streaming> {
    let sent: unknown;
    // A lane stream is relayed as the upstream's bytes unless a content filter reads its events.
    const bytes = !(scan && call.wire.frameTexts);
    const routed = await this.held(prep, () =>
      routeWithFallbacks(
        this.fallback,
        call,
        prep,
        (a, signal): Promise<AsyncIterable<RelayFrame> | AsyncIterable<ChatChunk>> => {
          const provider = this.deps.provider(a.candidate.endpoint.provider);
          sent = this.upstreamRequest(call, prep, a);
          if (a.lane)
            return (provider.forwardStream as NonNullable<Provider['forwardStream']>)(
              { wire: call.wire.native, body: sent as Body, headers: call.headers, stream: true, bytes },
              this.ctx(a, signal, true),
            );
          return provider.chatStream(
            extended(sent as ChatRequest, { stream: true, stream_options: { include_usage: true } }),
            this.ctx(a, signal, true),
          );
        },
      ),
    );
    const info = this.info(call, prep, routed, sent);
    // A stream whose caller leaves before reading it never runs `metered` (which settles the
    // reservation): released when the caller goes away, unless the stream started by then.
    const unread = () => prep.hold?.release();
    call.signal.addEventListener('abort', unread, { once: true });
    prep.onStreamStart = () => call.signal.removeEventListener('abort', unread);
    let final: { usage: Usage; cost: Cost } | null = null;
    const settle = (f: { usage: Usage; cost: Cost }) => {
      final = f;
    };
    if (routed.served.lane) {
      const frames = this.metered(
        call,
        prep,
        info,
        routed.result as AsyncIterable<RelayFrame>,
        readFrame,
        settle,
        scan && { scan, filter: (frames) => filterFrames(call.wire, scan, frames) },
        routed.span,
      );
      return { lane: true, frames, info, final: () => final };
    }
    const chunks = this.metered(
      call,
      prep,
      info,
      routed.result as AsyncIterable<ChatChunk>,
      readChunk,
      settle,
      scan && { scan, filter: (chunks) => filterChunks(scan, chunks) },
      routed.span,
    );
    return { lane: false, chunks, info, final: () => final };
  }

  /**
   * Relays a stream while reading what it says of usage; when it ends — completely, failed, or cut
   * by the caller — prices and records it before the stream's last frames go out. Usage is read
   * from the provider's items as they come; `answer` filters them on their way to the caller, and
   * the generation is recorded once it has seen the whole answer (its results complete). A stream
   * it blocks is billed as one the caller left (the provider did the work) and recorded as refused.
   */
  private async *metered<T>(
    call: InferenceCall,
    prep: Prepared,
    info: RouteInfo,
    source: AsyncIterable<T>,
    read: (item: T, m: Meter) => void,
    settle: (f: { usage: Usage; cost: Cost }) => void,
    answer: { scan: AnswerScan; filter: (items: AsyncIterable<T>) => AsyncIterable<T> } | null,
    span: TracedSpan | null,
  ): AsyncGenerator<T> {
    this.streaming++;
    prep.onStreamStart?.();
    const m: Meter = { usage: null, responseId: null, chars: 0, finishReason: null, safeguards: [] };
    let failure: unknown = null;
    try {
      if (answer) {
        const tapped = (async function* () {
          for await (const item of source) {
            read(item, m);
            yield item;
          }
        })();
        yield* answer.filter(tapped);
      } else {
        // No filter between: read here, one async generator fewer per item.
        for await (const item of source) {
          read(item, m);
          yield item;
        }
      }
    } catch (err) {
      // The answer filters' refusal is not the upstream failing (recorded as before they refused).
      if (!answer?.scan.blocked) failure = err;
      throw err;
    } finally {
      if (answer || m.safeguards.length)
        info = {
          ...info,
          safeguardRecords: [
            ...info.safeguardRecords,
            ...(answer?.scan.records() ?? []),
            ...providerSafeguardRecords(m.safeguards),
          ],
        };
      let invalid: string | null = null;
      if (m.usage) {
        const checked = this.checked(info, m.usage, () => this.estimate(call, prep, m.chars, false));
        m.usage = checked.usage;
        invalid = checked.invalid;
      }
      const { usage, estimated, nothing } = this.streamUsage(call, prep, m, failure !== null);
      const cost = nothing
        ? { total: 0, prompt: 0, completion: 0 }
        : costOf(info.served.endpoint.pricing, usage);
      settle({ usage, cost });
      const cutShort = failure !== null || (m.finishReason === null && call.signal.aborted);
      // The caller going away (or the shutdown grace closing its connection) is a cancellation.
      const status =
        call.signal.aborted && m.finishReason === null
          ? 'cancelled'
          : failure !== null
            ? 'error'
            : cutShort || m.finishReason === null
              ? 'cancelled'
              : 'success';
      // A block is recorded as the caller got it (as a whole answer's), not as the stream's end.
      const blocked = answer?.scan.blocked ? blockedOutcome(answer.scan) : null;
      const recorded = this.recordSuccess(call, prep, info, usage, cost, {
        streamed: true,
        finishReason: m.finishReason,
        estimated: estimated || invalid !== null,
        status,
        error: failure ? (failure as Error).message : invalid,
        upstreamId: m.responseId,
        ...blocked,
      });
      // The serving attempt's span ends with the stream, with its usage (an error if it broke).
      if (span) {
        callServed(span, call.trace, info, usage, cost, {
          finishReason: m.finishReason,
          responseId: m.responseId,
          status,
          ...(failure !== null ? { error: failure } : {}),
        });
      }
      this.streamEnded();
      // The stream's last frames ([DONE]) follow once the generation is journaled.
      await recorded;
    }
  }

  /**
   * What a stream that ended is billed: its reported usage when it completed; when it failed
   * before any output, nothing (as a call that failed before its answer); when it was cut after
   * output, the usage reported so far with the output seen estimated (never less than reported).
   */
  private streamUsage(
    call: InferenceCall,
    prep: Prepared,
    m: Meter,
    failed: boolean,
  ): { usage: Usage; estimated: boolean; nothing: boolean } {
    const nothing = failed && !call.signal.aborted && m.chars === 0;
    if (nothing) return { usage: this.estimate(call, prep, 0, true), estimated: !m.usage, nothing };
    if (!m.usage) return { usage: this.estimate(call, prep, m.chars, false), estimated: true, nothing };
    if (!failed && !call.signal.aborted) return { usage: m.usage, estimated: false, nothing };
    const completion = Math.max(m.usage.completion_tokens, estimateTokens(m.chars));
    const usage = {
      ...m.usage,
      completion_tokens: completion,
      total_tokens: m.usage.prompt_tokens + completion,
    };
    return { usage, estimated: completion !== m.usage.completion_tokens, nothing };
  }

  /** The provider's usage, checked (usage-check.ts); counted in the metrics when it was not valid. */
  private checked(info: RouteInfo, reported: Usage, estimate: () => Usage) {
    const out = checkUsage(reported, estimate);
    if (out.invalid) this.deps.metrics.usageInvalid.inc({ provider: info.served.endpoint.provider });
    return out;
  }

  /** Usage estimated from the prompt's text and `outputChars` (no prompt when nothing was served). */
  private estimate(call: InferenceCall, prep: Prepared, outputChars: number, nothing: boolean): Usage {
    const prompt = nothing ? 0 : estimateTokens(promptChars(call, prep));
    const completion = estimateTokens(outputChars);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  /**
   * Counts a prompt's tokens (Anthropic's count_tokens): the provider's own count where it serves
   * one natively (the body as sent), else an estimate. The caller's policy applies as to any call
   * (the model, rate limit, content filters); nothing is billed or recorded.
   */
  async countTokens(
    call: InferenceCall,
  ): Promise<
    | { forwarded: ForwardedJson; provider: string }
    | { counted: number; provider: string }
    | { estimate: number; provider: string }
  > {
    call = withoutOnline(call, this.deps.catalog);
    const prep = await this.prepare(call, false); // nothing is billed
    let last: Failure | null = null;
    for (const a of prep.attempts.filter((x) => x.lane)) {
      const provider = a.candidate.endpoint.provider;
      const scope = openAttempt(call.signal, this.deps.upstreamTimeoutMs);
      try {
        const body = call.wire.laneBody(prep.body, a.candidate.endpoint.upstreamModel);
        const adapter = this.deps.provider(provider) as Required<Pick<Provider, 'forward'>>;
        const forwarded = await adapter.forward(
          { wire: call.wire.native, body, headers: call.headers, stream: false },
          this.ctx(a, scope.signal, false),
        );
        return { forwarded, provider };
      } catch (raw) {
        if (call.signal.aborted) throw raw;
        scope.unlink();
        last = { err: classify(raw, scope.timedOut(), this.deps.upstreamTimeoutMs), provider, lane: true };
        if (!last.err.retryable) break;
      } finally {
        scope.close();
      }
    }
    if (last) throw upstreamToApiError(last);
    // No lane: the first provider that counts a translated request does (Anthropic's count of a
    // Responses body, say); a failure there falls back to the estimate, as a count is only a hint.
    const counting = prep.attempts.find(
      (a) => !a.lane && this.deps.provider(a.candidate.endpoint.provider).countTokens,
    );
    if (counting && prep.canonical) {
      const provider = counting.candidate.endpoint.provider;
      const adapter = this.deps.provider(provider) as Required<Pick<Provider, 'countTokens'>>;
      const scope = openAttempt(call.signal, this.deps.upstreamTimeoutMs);
      try {
        const req = { ...(prep.canonical as ChatRequest), model: counting.candidate.endpoint.upstreamModel };
        return { counted: await adapter.countTokens(req, this.ctx(counting, scope.signal, false)), provider };
      } catch (raw) {
        if (call.signal.aborted) throw raw;
        scope.unlink();
      } finally {
        scope.close();
      }
    }
    const provider = prep.attempts[0]?.candidate.endpoint.provider ?? '';
    return { estimate: estimateTokens(promptChars(call, prep)), provider };
  }

  /**
   * Resolves once no stream is being relayed (each has recorded its generation), or after
   * `timeoutMs`. On shutdown the server has closed the connections of the streams still running;
   * their generations are recorded as they unwind, before accounting writes its last batch.
   */
  async drain(timeoutMs = 5_000): Promise<void> {
    if (this.streaming === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.drained.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  // -------------------------------------------------------------------------------------------
  // Audio

  /**
   * Text to speech. Resolves once an upstream answered with audio (failures before that fall back
   * like any call's); the audio is relayed as it arrives, and the generation recorded when it ends
   * — completely, cut by the caller, or failed mid-way (billed unless nothing arrived).
   */
  async speak(
    call: InferenceCall,
  ): Promise<{ info: RouteInfo; contentType: string; audio: AsyncIterable<Buffer> }> {
    const prep = await this.prepare(call);
    const { result, info, span } = await this.held(prep, () =>
      // Planning left out the providers without one (ADAPTER_METHODS).
      this.whole(call, prep, (provider, sent, ctx) =>
        (provider.speech as NonNullable<Provider['speech']>)(sent as SpeechRequest, {
          ...ctx,
          idleTimeoutMs: this.deps.streamIdleTimeoutMs,
        }),
      ),
    );
    const answer = result as SpeechAudio;
    const input = (prep.body as { input?: unknown }).input;
    const characters = typeof input === 'string' ? input.length : 0;
    return {
      info,
      contentType: answer.contentType,
      audio: this.relayed(call, prep, info, answer.audio, span, (complete) =>
        speechUsage(
          characters,
          info.served.endpoint.pricing,
          complete ? (answer.reported?.() ?? null) : null,
        ),
      ),
    };
  }

  /**
   * An answer relayed as it arrives (speech's audio, a transcription's events), its generation
   * recorded when it ends with the usage `usageOf` reads from what passed.
   */
  private relayed(
    call: InferenceCall,
    prep: Prepared,
    info: RouteInfo,
    chunks: AsyncIterable<Buffer>,
    span: TracedSpan | null,
    usageOf: (complete: boolean) => { usage: Usage; estimated: boolean },
  ): AsyncGenerator<Buffer> {
    // Released when the caller leaves before the answer is read (nothing else settles it then).
    const unread = () => prep.hold?.release();
    call.signal.addEventListener('abort', unread, { once: true });
    prep.onStreamStart = () => call.signal.removeEventListener('abort', unread);
    return this.relayAudio(call, prep, info, chunks, span, usageOf);
  }

  private async *relayAudio(
    call: InferenceCall,
    prep: Prepared,
    info: RouteInfo,
    chunks: AsyncIterable<Buffer>,
    span: TracedSpan | null,
    usageOf: (complete: boolean) => { usage: Usage; estimated: boolean },
  ): AsyncGenerator<Buffer> {
    this.streaming++;
    prep.onStreamStart?.();
    let bytes = 0;
    let failure: unknown = null;
    let complete = false;
    try {
      for await (const chunk of chunks) {
        bytes += chunk.length;
        yield chunk;
      }
      complete = true;
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      const pricing = info.served.endpoint.pricing;
      const { usage, estimated } = usageOf(complete);
      // An upstream that failed before any audio did no work the caller got.
      const cost =
        failure !== null && bytes === 0 ? { total: 0, prompt: 0, completion: 0 } : costOf(pricing, usage);
      const status = complete ? 'success' : failure !== null && !call.signal.aborted ? 'error' : 'cancelled';
      const recorded = this.recordSuccess(call, prep, info, usage, cost, {
        streamed: true,
        finishReason: complete ? 'stop' : null,
        estimated,
        status,
        error: failure ? (failure as Error).message : null,
      });
      if (span) {
        callServed(span, call.trace, info, usage, cost, {
          finishReason: complete ? 'stop' : null,
          responseId: null,
          status,
        });
      }
      this.streamEnded();
      await recorded;
    }
  }

  /**
   * A transcription: the upstream's whole answer, billed by the usage it reports (tokens or a
   * duration), else by estimates from the audio's size and the text (recorded as estimated). An
   * event stream (`stream: true`) resolves at its headers, as speech does, and is relayed as it
   * arrives; its `transcript.text.done` event carries the usage.
   */
  async transcribe(
    call: InferenceCall,
  ): Promise<
    | (Completed<TranscriptionAnswer> & { lane: false })
    | { info: RouteInfo; contentType: string; events: AsyncIterable<Buffer> }
  > {
    const prep = await this.prepare(call);
    const { result, info, span } = await this.held(prep, () =>
      // Planning left out the providers without one (ADAPTER_METHODS).
      this.whole(call, prep, (provider, sent, ctx) =>
        (provider.transcription as NonNullable<Provider['transcription']>)(sent as TranscriptionRequest, {
          ...ctx,
          idleTimeoutMs: this.deps.streamIdleTimeoutMs,
        }),
      ),
    );
    const answer = result as TranscriptionAnswer;
    const bytes = (prep.canonical as TranscriptionRequest | undefined)?.audio.bytes ?? 0;
    const { events, streamed } = answer;
    if (events && streamed)
      return {
        info,
        contentType: answer.contentType,
        events: this.relayed(call, prep, info, events, span, () => {
          // Without a done event (cut short, or never sent), estimated from the deltas' text.
          const { text, done } = streamed();
          return transcriptionUsage(done ?? undefined, text, bytes);
        }),
      };
    const { usage, estimated } = transcriptionUsage(answer.parsed, answer.body, bytes);
    const cost = costOf(info.served.endpoint.pricing, usage);
    await this.recordSuccess(call, prep, info, usage, cost, {
      streamed: false,
      finishReason: 'stop',
      estimated,
      upstreamId: null,
    });
    if (span) {
      callServed(span, call.trace, info, usage, cost, { finishReason: 'stop', responseId: null });
    }
    return { lane: false, response: answer, info, usage, cost };
  }

  // -------------------------------------------------------------------------------------------
  // Recording

  private recordSuccess(
    call: InferenceCall,
    prep: Prepared,
    info: RouteInfo,
    usage: Usage,
    cost: Cost,
    outcome: Outcome,
  ): void | Promise<void> {
    const model = info.model.id;
    this.deps.metrics.tokens.inc({ model, kind: 'prompt' }, usage.prompt_tokens);
    this.deps.metrics.tokens.inc({ model, kind: 'completion' }, usage.completion_tokens);
    if (cost.total > 0) this.deps.metrics.cost.inc({ model }, cost.total);
    const row = servedRow(call, info, usage, cost, outcome, {
      safeguards: info.safeguardRecords,
      metadata: storedMetadata(info),
    });
    if (!outcome.estimated && row.completion_tokens > 0 && !call.hooks?.upstream) {
      const perSecond = (row.completion_tokens / Math.max(row.generation_time_ms, 1)) * 1000;
      const provider = info.served.endpoint.provider;
      const prev = this.throughputEwma.get(provider);
      this.throughputEwma.set(provider, prev === undefined ? perSecond : prev * 0.8 + perSecond * 0.2);
    }
    return this.write(call, prep, row);
  }

  /**
   * The caller left while an upstream was working on the call (the attempt is aborted with it). As
   * for a stream cut short, the prompt the upstream received is billed (estimated: nothing was
   * reported); no completion reached the caller.
   */
  private recordCancelled(
    call: InferenceCall,
    prep: Prepared,
    served: Candidate,
    attempts: number,
    startedAt: number,
    tried: Tried[],
  ): void {
    const usage = this.estimate(call, prep, 0, false);
    const info = {
      generationId: this.deps.newGenerationId(),
      model: served.model,
      served,
      attempts,
      startedAt,
      lane: false,
      tried,
    };
    const row = servedRow(
      call,
      info,
      usage,
      costOf(served.endpoint.pricing, usage),
      { streamed: call.stream, finishReason: null, estimated: true, status: 'cancelled' },
      {
        safeguards: prep.safeguardRecords,
        metadata: plannedMetadata(call, prep, tried, {
          model: served.model.id,
          provider: served.endpoint.provider,
        }),
      },
    );
    // 499: the client closed the request before an answer (no status was ever sent).
    void this.write(call, prep, { ...row, http_status: 499 });
  }

  private recordFailure(
    call: InferenceCall,
    prep: Prepared,
    last: Failure,
    attempts: number,
    startedAt: number,
    tried: Tried[],
  ) {
    const mapped = upstreamToApiError(last);
    void this.write(
      call,
      prep,
      failedRow(
        call,
        this.deps.newGenerationId(),
        {
          model: last.model ?? prep.model.id,
          provider: last.provider,
          status: mapped.status,
          message: mapped.message,
          attempts,
          startedAt,
          tried,
        },
        { safeguards: prep.safeguardRecords, metadata: plannedMetadata(call, prep, tried) },
      ),
    );
  }
}
