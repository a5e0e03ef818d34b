import { randomFillSync } from 'node:crypto';
import type { Caller } from '../accounts/caller.js';
import type {
  ChatChunk,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Usage,
} from '../formats/chat.js';
import type { CallSignal } from '../lib/call-abort.js';
import { ApiError, badRequest, forbidden, notFound } from '../lib/errors.js';
import { type Provider, UpstreamError } from '../providers/types.js';
import type { GenerationRow } from './accounting.js';
import type { ByokChoice, CallChecks, CallGuard, InferenceCall, RouteInfo } from './call.js';
import type { Catalog, ModelEntry } from './catalog.js';
import { findModel } from './catalog.js';
import { type FallbackContext, type Prepared, routeWithFallbacks, upstreamToApiError } from './fallback.js';
import type { RoutingMetrics } from './metrics.js';
import { admitUnpriced } from './passthrough.js';
import type { ProviderPreferences } from './preferences.js';
import { type Cost, costOf } from './pricing.js';
import { failedRow, type Outcome, servedRow } from './records.js';
import { type Candidate, type Exclusion, selectCandidates } from './select.js';

/** What the engine needs from the rest of Gatehouse; wired in services.ts. */
export interface EngineDeps {
  catalog: Catalog;
  provider: (slug: string) => Provider;
  /** Guardrails, limits, budgets, balance, content filters and rate limits for one call. */
  guard: CallGuard;
  byok: (caller: Caller, providerSlug: string, modelId: string) => Promise<ByokChoice>;
  /** Capability check per provider kind; throws TranslationError with the field it cannot carry. */
  assertTranslatable: (req: ChatRequest, kind: 'openai' | 'anthropic' | 'google') => void;
  /** Records a generation; a promise is awaited before the call's answer goes out (the journal). */
  record: (row: GenerationRow) => void | Promise<void>;
  metrics: RoutingMetrics;
  newGenerationId: () => string;
  /** Deadline of an attempt until it answers (a stream: its headers); then a stream's longest silence. */
  upstreamTimeoutMs: number;
  /** Longest Retry-After the engine waits before retrying the last candidate once. */
  maxRetryWaitMs: number;
}

/** Random bytes drawn from the CSPRNG 4 KiB at a time: one `randomFillSync` per ~400 ids, not per id. */
const entropy = { pool: Buffer.alloc(4096), at: 4096 };
function randomHex(bytes: number): string {
  if (entropy.at + bytes > entropy.pool.length) {
    randomFillSync(entropy.pool);
    entropy.at = 0;
  }
  const hex = entropy.pool.toString('hex', entropy.at, entropy.at + bytes);
  entropy.at += bytes;
  return hex;
}

/** A generation id: `gen-<ms since epoch>-<20 random hex digits>`. */
export const newGenerationId = (): string => `gen-${Date.now()}-${randomHex(10)}`;

/** Rough token estimate (4 characters a token) for calls whose upstream reported no usage. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

const messagesText = (messages: ChatMessage[]) =>
  messages
    .map((m) =>
      typeof m.content === 'string'
        ? m.content
        : (m.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join(' '),
    )
    .join('\n');

/**
 * The routing engine: a library used by the HTTP endpoints and by batches. It resolves the model,
 * enforces the caller's policy, picks candidate endpoints, calls providers with fallbacks and
 * retries, and records a generation for every call (successful, failed or cut short).
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

  constructor(private readonly deps: EngineDeps) {
    this.fallback = {
      metrics: deps.metrics,
      newGenerationId: deps.newGenerationId,
      upstreamTimeoutMs: deps.upstreamTimeoutMs,
      maxRetryWaitMs: deps.maxRetryWaitMs,
      latency: this.latencyEwma,
      onExhausted: (call, prep, last, attempts, startedAt) =>
        this.recordFailure(call, prep, last, attempts, startedAt),
      onCancelled: (call, prep, c, attempts, startedAt) =>
        this.recordCancelled(call, prep, c, attempts, startedAt),
    };
  }

  /** The catalog model a request names, or 404. */
  model(requested: string, kind: 'chat' | 'embeddings'): ModelEntry {
    const model = findModel(this.deps.catalog, requested);
    if (!model) throw notFound(`Model ${requested}`);
    admitUnpriced(this.deps.catalog, model, this.deps.metrics.unpricedCalls);
    if (model.kind !== kind) {
      throw badRequest(`Model ${model.id} is ${kind === 'chat' ? 'an embeddings' : 'a chat'} model`);
    }
    return model;
  }

  private async prepare(call: InferenceCall, kind: 'chat' | 'embeddings'): Promise<Prepared> {
    const { caller } = call;
    if (caller.isManagement)
      throw forbidden('Management keys cannot call inference endpoints; use an API key');
    const model = this.model(call.request.model, kind);
    const checks = await this.deps.guard.open(caller, { rateLimit: call.hooks?.rateLimit !== false });
    for (const verdict of [await checks.admit(), checks.modelAllowed(model)]) {
      if (!verdict.ok)
        throw new ApiError(
          verdict.status,
          verdict.message,
          verdict.retryAfterMs ? { retry_after_ms: verdict.retryAfterMs } : undefined,
        );
    }
    const filtered = checks.filter(call.request.messages);
    if (filtered.blocked) throw forbidden(`Blocked by content filter: ${filtered.blocked}`);
    const request = { ...call.request, messages: filtered.messages };
    const { candidates, excluded } = await this.plan(
      caller,
      model,
      kind === 'chat' ? request : null,
      call.prefs,
      checks,
    );
    const strategy = call.prefs.sort ? `sort:${call.prefs.sort}` : call.prefs.order ? 'order' : 'default';
    return { model, request, candidates, excluded, safeguards: filtered.results, strategy, checks };
  }

  /**
   * The endpoints that may serve `model` for this caller, in try order, with their credentials;
   * 403 when policy leaves none, 400 when the request's needs or wire format leave none.
   * `request` null (embeddings, batch admission) skips the capability and translation checks.
   */
  private async plan(
    caller: Caller,
    model: ModelEntry,
    request: ChatRequest | null,
    prefs: ProviderPreferences,
    checks: CallChecks,
  ): Promise<{ candidates: Candidate[]; excluded: Exclusion[] }> {
    const byokCache = new Map<string, ByokChoice>();
    for (const e of model.endpoints)
      byokCache.set(e.provider, await this.deps.byok(caller, e.provider, model.id));
    const { candidates, excluded } = selectCandidates({
      catalog: this.deps.catalog,
      model,
      request,
      prefs,
      providerAllowed: (p, m) => checks.providerAllowed(p, m),
      byok: (slug) => byokCache.get(slug) ?? { primary: [], fallback: [], byokOnly: false },
      latency: (slug) => this.latencyEwma.get(slug) ?? 0,
      throughput: (slug) => this.throughputEwma.get(slug),
    });

    // Drop endpoints whose wire format cannot carry the request, keeping the reason.
    const translatable: Candidate[] = [];
    let translationError: string | null = null;
    for (const c of candidates) {
      const kindOf = c.provider.config.kind;
      if (request && (kindOf === 'anthropic' || kindOf === 'google' || kindOf === 'openai')) {
        try {
          this.deps.assertTranslatable(request, kindOf);
        } catch (err) {
          translationError = (err as Error).message;
          excluded.push({ provider: c.endpoint.provider, reason: translationError });
          continue;
        }
      }
      translatable.push(c);
    }
    if (translatable.length === 0) {
      if (translationError) throw badRequest(translationError);
      const reasons = excluded.map((e) => `${e.provider}: ${e.reason}`).join('; ');
      const policyRefusal = excluded.find((e) => e.reason.startsWith('Provider'));
      if (policyRefusal) throw forbidden(`No allowed provider for ${model.id}: ${reasons}`);
      throw badRequest(`No provider for ${model.id} satisfies the request: ${reasons || 'none configured'}`);
    }
    return { candidates: translatable, excluded };
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
    kind: 'chat' | 'embeddings',
    prefs: ProviderPreferences,
  ): Promise<{ model: ModelEntry; candidates: Candidate[] }> {
    if (caller.isManagement) throw forbidden('Management keys cannot create batches; use an API key');
    const model = this.model(modelSlug, kind);
    const checks = await this.deps.guard.open(caller, { rateLimit: false });
    for (const verdict of [await checks.admit(), checks.modelAllowed(model)]) {
      if (!verdict.ok) throw new ApiError(verdict.status, verdict.message);
    }
    const { candidates } = await this.plan(caller, model, null, prefs, checks);
    return { model, candidates };
  }

  /** Runs `attempt` over the candidates with fallbacks and one Retry-After retry of the last. */
  private route<T>(
    call: InferenceCall,
    prep: Prepared,
    attempt: (c: Candidate, req: ChatRequest, signal: CallSignal) => Promise<T>,
  ): Promise<{ result: T; info: RouteInfo }> {
    return routeWithFallbacks(this.fallback, call, prep, attempt);
  }

  /** A non-streaming chat call. */
  async chat(
    call: InferenceCall,
  ): Promise<{ response: ChatResponse; info: RouteInfo; usage: Usage; cost: Cost }> {
    const prep = await this.prepare(call, 'chat');
    const { result, info } = await this.route(call, prep, (c, req, signal) =>
      this.deps
        .provider(c.endpoint.provider)
        .chat({ ...req, stream: false }, { apiKey: c.credential.apiKey, signal }),
    );
    const reported = result.usage;
    const usage: Usage = reported ?? {
      prompt_tokens: estimateTokens(messagesText(prep.request.messages)),
      completion_tokens: estimateTokens(messagesText(result.choices.map((ch) => ch.message))),
      total_tokens: 0,
    };
    if (!reported) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const cost = costOf(info.served.endpoint.pricing, usage);
    await this.recordSuccess(call, info, usage, cost, {
      streamed: false,
      finishReason: result.choices[0]?.finish_reason ?? null,
      estimated: !reported,
    });
    return { response: result, info, usage, cost };
  }

  /**
   * A streaming chat call. Resolves once an upstream accepted the stream (earlier failures fall
   * back like non-streaming calls); the returned iterator records the generation when it ends,
   * including when the upstream dies mid-way (partial usage, estimated when not reported) or
   * the caller goes away.
   */
  async chatStream(call: InferenceCall): Promise<{
    stream: AsyncIterable<ChatChunk>;
    info: RouteInfo;
    /** Usage and cost once the stream is over (for the caller-format encoders' final event). */
    final: () => { usage: Usage; cost: Cost } | null;
  }> {
    const prep = await this.prepare(call, 'chat');
    const { result, info } = await this.route(call, prep, (c, req, signal) =>
      this.deps
        .provider(c.endpoint.provider)
        .chatStream(
          { ...req, stream: true, stream_options: { include_usage: true } },
          { apiKey: c.credential.apiKey, signal, idleTimeoutMs: this.deps.upstreamTimeoutMs },
        ),
    );
    let final: { usage: Usage; cost: Cost } | null = null;
    const self = this;
    async function* metered(): AsyncGenerator<ChatChunk> {
      self.streaming++;
      let reported: Usage | null = null;
      let text = '';
      let finishReason: string | null = null;
      let failure: unknown = null;
      try {
        for await (const chunk of result) {
          if (chunk.usage) reported = chunk.usage;
          for (const ch of chunk.choices) {
            text += (ch.delta.content ?? '') + (ch.delta.reasoning ?? '');
            for (const tc of ch.delta.tool_calls ?? [])
              text += (tc.function?.name ?? '') + (tc.function?.arguments ?? '');
            if (ch.finish_reason) finishReason = ch.finish_reason;
          }
          yield chunk;
        }
      } catch (err) {
        failure = err;
        throw err;
      } finally {
        // An upstream that failed before any output and reported no usage is billed nothing, like
        // a call that failed before its answer; once output came, the partial usage is billed.
        const nothing = failure !== null && !call.signal.aborted && !reported && text === '';
        const usage: Usage = reported ?? {
          prompt_tokens: nothing ? 0 : estimateTokens(messagesText(prep.request.messages)),
          completion_tokens: estimateTokens(text),
          total_tokens: 0,
        };
        if (!reported) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
        const cost = nothing
          ? { total: 0, prompt: 0, completion: 0 }
          : costOf(info.served.endpoint.pricing, usage);
        final = { usage, cost };
        const cutShort = failure !== null || (finishReason === null && call.signal.aborted);
        const recorded = self.recordSuccess(call, info, usage, cost, {
          streamed: true,
          finishReason,
          estimated: !reported,
          // The caller going away (or the shutdown grace closing its connection) is a cancellation.
          status:
            call.signal.aborted && finishReason === null
              ? 'cancelled'
              : failure !== null
                ? 'error'
                : cutShort || finishReason === null
                  ? 'cancelled'
                  : 'success',
          error: failure ? (failure as Error).message : null,
        });
        if (--self.streaming === 0) for (const done of self.drained.splice(0)) done();
        // The stream's last frames ([DONE]) follow once the generation is journaled.
        await recorded;
      }
    }
    return { stream: metered(), info, final: () => final };
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

  /** An embeddings call (content filters apply to string inputs). */
  async embeddings(call: Omit<InferenceCall, 'request'> & { request: EmbeddingsRequest }): Promise<{
    response: EmbeddingsResponse;
    info: RouteInfo;
    usage: Usage;
    cost: Cost;
  }> {
    const inputs = typeof call.request.input === 'string' ? [call.request.input] : call.request.input;
    const textual = inputs.every((i) => typeof i === 'string');
    const asChat: ChatRequest = {
      model: call.request.model,
      messages: textual ? (inputs as string[]).map((t) => ({ role: 'user', content: t })) : [],
    };
    const prep = await this.prepare({ ...call, request: asChat }, 'embeddings');
    const filteredInput = textual
      ? prep.request.messages.map((m) => m.content as string)
      : call.request.input;
    const { result, info } = await this.route({ ...call, request: asChat }, prep, (c, _req, signal) => {
      const p = this.deps.provider(c.endpoint.provider);
      if (!p.embeddings)
        throw new UpstreamError(400, `${c.endpoint.provider} serves no embeddings`, { retryable: false });
      return p.embeddings(
        {
          ...call.request,
          model: c.endpoint.upstreamModel,
          input:
            typeof call.request.input === 'string'
              ? ((filteredInput as string[])[0] as string)
              : filteredInput,
        },
        { apiKey: c.credential.apiKey, signal },
      );
    });
    const usage: Usage = {
      prompt_tokens: result.usage.prompt_tokens,
      completion_tokens: 0,
      total_tokens: result.usage.total_tokens,
    };
    const cost = costOf(info.served.endpoint.pricing, usage);
    await this.recordSuccess({ ...call, request: asChat }, info, usage, cost, {
      streamed: false,
      finishReason: null,
      estimated: false,
    });
    return { response: result, info, usage, cost };
  }

  private recordSuccess(
    call: InferenceCall,
    info: RouteInfo,
    usage: Usage,
    cost: Cost,
    outcome: Outcome,
  ): void | Promise<void> {
    const model = info.model.id;
    this.deps.metrics.tokens.inc({ model, kind: 'prompt' }, usage.prompt_tokens);
    this.deps.metrics.tokens.inc({ model, kind: 'completion' }, usage.completion_tokens);
    if (cost.total > 0) this.deps.metrics.cost.inc({ model }, cost.total);
    const row = servedRow(call, info, usage, cost, outcome);
    if (!outcome.estimated && row.completion_tokens > 0) {
      const perSecond = (row.completion_tokens / Math.max(row.generation_time_ms, 1)) * 1000;
      const provider = info.served.endpoint.provider;
      const prev = this.throughputEwma.get(provider);
      this.throughputEwma.set(provider, prev === undefined ? perSecond : prev * 0.8 + perSecond * 0.2);
    }
    return (call.hooks?.record ?? this.deps.record)(row);
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
  ): void {
    const usage: Usage = {
      prompt_tokens: estimateTokens(messagesText(prep.request.messages)),
      completion_tokens: 0,
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens;
    const info = {
      generationId: this.deps.newGenerationId(),
      model: prep.model,
      served,
      attempts,
      startedAt,
    };
    const row = servedRow(call, info, usage, costOf(served.endpoint.pricing, usage), {
      streamed: call.request.stream === true,
      finishReason: null,
      estimated: true,
      status: 'cancelled',
    });
    // 499: the client closed the request before an answer (no status was ever sent).
    void (call.hooks?.record ?? this.deps.record)({ ...row, http_status: 499 });
  }

  private recordFailure(
    call: InferenceCall,
    prep: Prepared,
    last: { err: UpstreamError; provider: string },
    attempts: number,
    startedAt: number,
  ) {
    const mapped = upstreamToApiError(last.err, last.provider);
    (call.hooks?.record ?? this.deps.record)(
      failedRow(call, this.deps.newGenerationId(), {
        model: prep.model.id,
        provider: last.provider,
        status: mapped.status,
        message: mapped.message,
        attempts,
        startedAt,
      }),
    );
  }
}
