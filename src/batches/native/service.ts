import { randomBytes } from 'node:crypto';
import type { Caller } from '../../accounts/caller.js';
import type { BatchConfig } from '../../config.js';
import type { Db } from '../../db/connection.js';
import { WIRES } from '../../inference/wires/index.js';
import { tapMessage } from '../../providers/anthropic/lane.js';
import { tapChat, tapResponse } from '../../providers/openai/lane.js';
import { type ForwardedJson, UpstreamError } from '../../providers/types.js';
import type { GenerationRow } from '../../routing/accounting.js';
import type { Catalog, ProviderEntry } from '../../routing/catalog.js';
import type { Engine } from '../../routing/engine.js';
import { executeRequest } from '../execute.js';
import { BATCH_ENDPOINTS, type BatchEndpoint, type BatchProviderPrefs, resultError } from '../model.js';
import type { WorkerLog } from '../outcomes.js';
import { failedResult, type OutcomeWriter } from '../outcomes.js';
import type { BatchRow, LeaseRef } from '../store.js';
import { AnthropicBatches } from './anthropic.js';
import { NativeApiError, type NativeBatchApi, type NativeResult, type NativeStatus } from './api.js';
import { BEDROCK_MAX_RECORDS, BEDROCK_MIN_RECORDS, BedrockBatches, bedrockBatchable } from './bedrock.js';
import { OpenAiBatches } from './openai.js';
import * as nstore from './store.js';

/** The batch endpoints each provider kind's batch API takes, and its most requests per batch. */
const SUPPORTED = {
  openai: { endpoints: ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'], maxRequests: 50_000 },
  anthropic: { endpoints: ['/v1/messages'], maxRequests: 100_000 },
  // Anthropic models' InvokeModel bodies (the lane of /messages); a job has a minimum size.
  bedrock: {
    endpoints: ['/v1/messages'],
    maxRequests: BEDROCK_MAX_RECORDS,
    minRequests: BEDROCK_MIN_RECORDS,
  },
} as const satisfies Record<
  string,
  { endpoints: readonly BatchEndpoint[]; maxRequests: number; minRequests?: number }
>;

/** Both OpenAI and Anthropic bill batches at half price; `batch_discount` overrides it per provider. */
export const DEFAULT_BATCH_DISCOUNT = 0.5;
/** Providers promise results within 24 hours: a shorter completion window stays on the worker. */
const PROVIDER_WINDOW_S = 86_400;
/** Answers replayed per claim at collection. */
const COLLECT_CHUNK = 200;

/**
 * Whether a provider's batches go to its batch API: openai and anthropic kinds, and bedrock
 * entries with batch inference configured (`batch_s3_uri`, `batch_role_arn`), unless `native_batches: false`.
 */
export function nativeBatchesOn(entry: ProviderEntry): entry is ProviderEntry & {
  config: { kind: keyof typeof SUPPORTED };
} {
  const kind = entry.config.kind;
  const offered =
    kind === 'openai' || kind === 'anthropic' || (kind === 'bedrock' && !!entry.config.bedrock?.batch);
  return offered && entry.nativeBatches !== false;
}

/**
 * The batch API of a provider entry, one per configuration (Bedrock's holds an AWS credential
 * chain and an S3 client: built once, not at every poll; a reloaded entry gets its own).
 */
const apis = new WeakMap<object, NativeBatchApi>();
function nativeApi(entry: ProviderEntry): NativeBatchApi | null {
  const known = apis.get(entry.config);
  if (known) return known;
  const kind = entry.config.kind;
  const api =
    kind === 'openai'
      ? new OpenAiBatches(entry.config)
      : kind === 'anthropic'
        ? new AnthropicBatches(entry.config)
        : kind === 'bedrock' && entry.config.bedrock?.batch
          ? new BedrockBatches(entry.config)
          : null;
  if (api) apis.set(entry.config, api);
  return api;
}

/** Bedrock signs with AWS credentials (never an organization's): there is no API key to check. */
const signsWithAws = (entry: ProviderEntry) => entry.config.kind === 'bedrock';

export interface NativeDeps {
  db: Db;
  engine: Engine;
  catalog: Catalog;
  config: BatchConfig;
  log: WorkerLog;
  writer: OutcomeWriter;
  workerId: string;
}

/**
 * Provider-native batches. A batch whose model's first provider has a batch API (and the
 * operator's key, and a 24h window) has its pending requests handed to that API: each request is
 * first run through the routing engine up to the upstream call — guardrails, budgets, content
 * filters, the lane's body with the upstream model id — and that body is what the provider gets.
 * Results come back through the engine too (the provider's answer replayed as the upstream's
 * reply), so each is priced, recorded and answered exactly as the synchronous call would be, less
 * the batch discount, and written by the worker's outcome writer under a lease (exactly once).
 *
 * Crash safety: every step is recorded on the batch row before the next (native_state); a
 * submission whose worker died is taken over once its hold lapses, a submitted batch is polled by
 * whichever worker's turn it is. What the provider rejects, or never answers, goes back to the
 * worker.
 */
export class NativeBatches {
  /** Background steps in flight, per batch (one at a time per batch in this process). */
  private readonly busy = new Map<string, Promise<void>>();

  constructor(private readonly deps: NativeDeps) {}

  /** Set when the worker stops: a submission being prepared stops (another worker takes it over). */
  private stopping = false;

  /** Stops preparing submissions and waits for the background steps (the worker is stopping). */
  async idle(): Promise<void> {
    this.stopping = true;
    while (this.busy.size > 0) await Promise.allSettled([...this.busy.values()]);
  }

  /**
   * Moves the native side of a batch along; called by the worker's housekeeping for batches in
   * progress or cancelling. The decision (and handing the requests over) is awaited, so no claim
   * of this round takes them; the slow steps run in the background.
   */
  async step(b: BatchRow, caller: Caller | null): Promise<void> {
    if (this.busy.has(b.id)) return;
    try {
      await this.advance(b, caller);
    } catch (err) {
      // The database or the model data: the next round tries again; other batches go on.
      this.deps.log.error({ err, batch_id: b.id }, 'native batch step failed');
    }
  }

  private async advance(b: BatchRow, caller: Caller | null): Promise<void> {
    const { db, config } = this.deps;
    const now = Date.now();
    switch (b.native_state) {
      case null: {
        if (b.status !== 'in_progress' || !caller) return;
        const provider = await this.choose(b, caller);
        if (!provider) return nstore.decideWorker(db, b.id);
        if (!(await nstore.beginSubmit(db, b.id, provider, now + config.leaseMs))) return;
        const submitting = { ...b, native_state: 'submitting', native_provider: provider };
        return this.background(b.id, () => this.submit(submitting, caller));
      }
      case 'submitting':
        // Its submitter died: taken over once its hold lapsed.
        if (await nstore.takeDue(db, b.id, 'submitting', now, now + config.leaseMs))
          this.background(b.id, () => this.submit(b, caller, true));
        return;
      case 'submitted':
        if (b.status === 'cancelling') return this.background(b.id, () => this.cancel(b));
        if (await nstore.takeDue(db, b.id, 'submitted', now, now + config.nativePollMs))
          this.background(b.id, () => this.poll(b, caller));
        return;
      case 'cancelling':
        if (await nstore.takeDue(db, b.id, 'cancelling', now, now + config.nativePollMs))
          this.background(b.id, () => this.poll(b, caller));
        return;
    }
  }

  /**
   * The batch closed early (expired, failed): its requests have their results already; the
   * provider's batch is cancelled so it stops working (and billing) for nothing.
   */
  async abandon(b: BatchRow): Promise<void> {
    if ((b.native_state !== 'submitted' && b.native_state !== 'cancelling') || !b.native_id) return;
    const api = this.api(b);
    if (api) await api.cancel(b.native_id).catch(() => {});
    await nstore.move(this.deps.db, b.id, b.native_state, 'collected', { native_error: 'the batch closed' });
  }

  private background(id: string, run: () => Promise<void>): void {
    const p = run()
      .catch((err) => this.deps.log.error({ err, batch_id: id }, 'native batch step failed'))
      .finally(() => this.busy.delete(id));
    this.busy.set(id, p);
  }

  private provider(b: Pick<BatchRow, 'native_provider'>): ProviderEntry | null {
    const entry = b.native_provider ? this.deps.catalog.providers.get(b.native_provider) : undefined;
    return entry && nativeBatchesOn(entry) ? entry : null;
  }

  private api(b: Pick<BatchRow, 'native_provider'>): NativeBatchApi | null {
    const entry = this.provider(b);
    return entry ? nativeApi(entry) : null;
  }

  /**
   * The provider the batch goes to natively, or null (the worker runs it). A provider's batch runs
   * one model: a batch of several (no `model`) stays on the worker. So does one created with
   * `anthropic-beta`: the captured bodies would reach the provider's batch without the betas.
   */
  private async choose(b: BatchRow, caller: Caller): Promise<string | null> {
    if (!b.model || b.expires_at - b.created_at < PROVIDER_WINDOW_S) return null;
    if (b.headers_json && 'anthropic-beta' in (JSON.parse(b.headers_json) as object)) return null;
    const endpoint = b.endpoint as BatchEndpoint;
    const kind = BATCH_ENDPOINTS[endpoint] === 'embeddings' ? 'embeddings' : 'chat';
    const prefs = b.provider_json ? (JSON.parse(b.provider_json) as BatchProviderPrefs) : {};
    let first: Awaited<ReturnType<Engine['admitBatch']>>['candidates'][number] | undefined;
    try {
      first = (await this.deps.engine.admitBatch(caller, b.model, kind, prefs)).candidates[0];
    } catch {
      return null; // refused now: the worker gives each request its error
    }
    // BYOK credentials stay on the worker: the batch would be billed to the organization's account.
    if (!first || first.credential.isByok) return null;
    const entry = first.provider;
    if (!entry.config.apiKey && !signsWithAws(entry)) return null;
    if (!nativeBatchesOn(entry)) return null;
    const supported: { endpoints: readonly string[]; maxRequests: number; minRequests?: number } =
      SUPPORTED[entry.config.kind];
    if (!supported.endpoints.includes(endpoint)) return null;
    if (b.request_count > supported.maxRequests) return null;
    // Below a provider's minimum job size (Bedrock's), the worker is the only way.
    if (b.request_count < (supported.minRequests ?? 1)) return null;
    if (entry.config.kind === 'bedrock' && !bedrockBatchable(entry.config, first.endpoint.upstreamModel))
      return null;
    return entry.config.slug;
  }

  /**
   * Builds the provider's batch from the requests handed to it (those the engine would not send to
   * that provider go back to the worker), submits it, and records its id.
   */
  private async submit(b: BatchRow, caller: Caller | null, takeover = false): Promise<void> {
    const { db, config, log } = this.deps;
    const entry = this.provider(b);
    const api = this.api(b);
    if (!entry || !api || !caller || b.status !== 'in_progress') {
      await nstore.release(db, b.id);
      await nstore.move(db, b.id, 'submitting', 'none');
      return;
    }
    // A submitter that died after the provider took its batch: that batch is the one to poll.
    const found = takeover && api.find ? await api.find(b.id).catch(() => null) : null;
    if (found) {
      await nstore.move(db, b.id, 'submitting', 'submitted', { native_id: found, native_until_ms: 0 });
      log.info(
        { batch_id: b.id, native_id: found },
        'resuming a provider batch an earlier submission created',
      );
      return;
    }
    const hold = setInterval(
      () => void nstore.extend(db, b.id, Date.now() + config.leaseMs).catch(() => {}),
      Math.max(100, Math.floor(config.leaseMs / 3)),
    );
    try {
      const lines: { customId: string; body: Record<string, unknown> }[] = [];
      const back: number[] = [];
      for (let after = -1; ; ) {
        const page = await nstore.waiting(db, b.id, after, 1000);
        if (page.length === 0) break;
        // Stopping: left in `submitting`; its hold lapses and a live worker starts it over.
        if (this.stopping) return;
        for (const r of page) {
          const body = await this.capture(b, caller, r.item, entry);
          if (body) lines.push({ customId: customIdOf(r.idx), body });
          else back.push(r.idx);
        }
        after = (page[page.length - 1] as { idx: number }).idx;
      }
      await nstore.release(db, b.id, back);
      const now = await this.currentStatus(b.id);
      if (lines.length === 0 || now !== 'in_progress') {
        await nstore.release(db, b.id);
        await nstore.move(db, b.id, 'submitting', 'none');
        return;
      }
      let id: string;
      try {
        id = await api.submit(lines, { endpoint: b.endpoint, gatehouseId: b.id });
      } catch (err) {
        // The provider refused the batch (or could not be reached): the worker runs it all.
        log.warn({ err, batch_id: b.id, provider: entry.config.slug }, 'provider refused a native batch');
        await nstore.release(db, b.id);
        await nstore.move(db, b.id, 'submitting', 'refused', { native_error: (err as Error).message });
        return;
      }
      const recorded = await nstore.move(db, b.id, 'submitting', 'submitted', {
        native_id: id,
        native_until_ms: Date.now() + config.nativePollMs,
      });
      // Another worker took the submission over meanwhile (this one was too slow): its batch stands.
      // Bedrock answers a resubmission with the job the first made (same token): that one is kept.
      if (!recorded) {
        if ((await this.nativeIdOf(b.id)) !== id) await api.cancel(id).catch(() => {});
      } else
        log.info(
          { batch_id: b.id, provider: entry.config.slug, native_id: id, requests: lines.length },
          'batch submitted to the provider',
        );
    } finally {
      clearInterval(hold);
    }
  }

  private async nativeIdOf(id: string): Promise<string | null | undefined> {
    const row = await this.deps.db
      .selectFrom('batches')
      .select('native_id')
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.native_id;
  }

  private async currentStatus(id: string): Promise<string | undefined> {
    const row = await this.deps.db
      .selectFrom('batches')
      .select('status')
      .where('id', '=', id)
      .executeTakeFirst();
    return row?.status;
  }

  /**
   * What the synchronous call would send the provider for this request: the engine runs it up to
   * the upstream call (policy, budgets, filters, the lane's body) and stops there. Null when it
   * would not go to `entry` on a lane with the operator's key, or is refused (the worker then
   * runs it, and gives it its error).
   */
  private async capture(
    b: BatchRow,
    caller: Caller,
    item: string,
    entry: ProviderEntry,
  ): Promise<Record<string, unknown> | null> {
    const stop = new AbortController();
    let captured: Record<string, unknown> | null = null;
    try {
      await executeRequest(this.deps.engine, b, caller, item, stop.signal, {
        rateLimit: false,
        // Nothing was served: the cancelled attempt's row is neither kept nor counted as spend.
        record: (row) => zeroCost(row),
        upstream: async (provider, req, ctx) => {
          // Any of the operator's keys (weighted keys spread the calls): the batch is the operator's.
          const operatorKeys = entry.config.keys?.map((k) => k.apiKey) ?? [entry.config.apiKey];
          const operators = signsWithAws(entry) || (!!ctx.apiKey && operatorKeys.includes(ctx.apiKey));
          if (provider === entry.config.slug && req && operators) captured = req.body;
          stop.abort(new Error('captured for the provider batch'));
          throw stop.signal.reason;
        },
      });
    } catch {}
    return captured;
  }

  /** Asks the provider to cancel; its batch ends soon, and what it finished is collected. */
  private async cancel(b: BatchRow): Promise<void> {
    const api = this.api(b);
    if (api && b.native_id)
      await api
        .cancel(b.native_id)
        .catch((err) => this.deps.log.warn({ err, batch_id: b.id }, 'cancelling the provider batch failed'));
    await nstore.move(this.deps.db, b.id, 'submitted', 'cancelling', { native_until_ms: 0 });
  }

  private async poll(b: BatchRow, caller: Caller | null): Promise<void> {
    const api = this.api(b);
    if (!api || !b.native_id) {
      // The provider left the configuration: the worker runs what is left.
      await nstore.release(this.deps.db, b.id);
      await nstore.move(this.deps.db, b.id, b.native_state as string, 'collected', {
        native_error: 'the provider is no longer configured for native batches',
      });
      return;
    }
    let status: NativeStatus;
    try {
      status = await api.status(b.native_id);
    } catch (err) {
      if (err instanceof NativeApiError && err.status === 404) {
        // The provider no longer knows the batch (deleted): the worker runs what is left.
        await nstore.release(this.deps.db, b.id);
        await nstore.move(this.deps.db, b.id, b.native_state as string, 'collected', {
          native_error: err.message,
        });
        return;
      }
      this.deps.log.warn({ err, batch_id: b.id }, 'polling the provider batch failed; trying again later');
      return;
    }
    if (status.state === 'running') return;
    await this.collect(b, caller, api, status);
  }

  /**
   * The provider's batch ended: each answer is replayed through the engine and recorded under a
   * lease; what the provider did not answer (errored, expired, cancelled, missing) goes back to
   * the worker. Safe to run again after a crash: only requests still waiting are taken.
   */
  private async collect(
    b: BatchRow,
    caller: Caller | null,
    api: NativeBatchApi,
    status: Extract<NativeStatus, { state: 'ended' }>,
  ): Promise<void> {
    const { db, log } = this.deps;
    let answered = 0;
    let rejected = 0;
    // Read as it downloads, a chunk at a time: memory stays bounded whatever the batch's size.
    let chunk = new Map<number, unknown>();
    let back: number[] = [];
    const flush = async () => {
      await nstore.release(db, b.id, back);
      await this.record(b, caller as Caller, chunk);
      chunk = new Map();
      back = [];
    };
    for await (const r of api.results(b.native_id as string)) {
      const idx = idxOf(r.customId);
      if (idx === null) continue;
      if ('body' in r && caller) {
        chunk.set(idx, r.body);
        answered++;
      } else {
        back.push(idx);
        rejected++;
      }
      if (chunk.size + back.length >= COLLECT_CHUNK) await flush();
    }
    await flush();
    await this.deps.writer.flush();
    await nstore.release(db, b.id); // never answered
    const message =
      status.outcome === 'completed'
        ? null
        : `provider batch ${status.outcome}${status.message ? `: ${status.message}` : ''}`;
    await nstore.move(db, b.id, b.native_state as string, 'collected', { native_error: message });
    log.info({ batch_id: b.id, native_id: b.native_id, answered, rejected }, 'provider batch collected');
  }

  /** Leases the requests of these answers (those still waiting) and replays each. */
  private async record(b: BatchRow, caller: Caller, answers: Map<number, unknown>): Promise<void> {
    if (answers.size === 0) return;
    const token = randomBytes(8).toString('hex');
    const claimed = await nstore.claim(this.deps.db, b.id, [...answers.keys()], {
      owner: this.deps.workerId,
      token,
      until: Date.now() + this.deps.config.leaseMs,
    });
    for (const c of claimed)
      await this.replay(b, caller, { batchId: b.id, idx: c.idx, token }, c.item, answers.get(c.idx));
  }

  /**
   * Runs a request through the engine with the provider's batch answer standing in for the
   * upstream's reply: priced (less the discount), recorded and encoded as the synchronous call.
   */
  private async replay(
    b: BatchRow,
    caller: Caller,
    ref: LeaseRef,
    item: string,
    answer: unknown,
  ): Promise<void> {
    const entry = this.provider(b) as ProviderEntry;
    const discount = entry.batchDiscount ?? DEFAULT_BATCH_DISCOUNT;
    const wire = WIRES[BATCH_ENDPOINTS[b.endpoint as BatchEndpoint]].native;
    const tap =
      wire === 'anthropic-messages' ? tapMessage : wire === 'openai-responses' ? tapResponse : tapChat;
    const rows: GenerationRow[] = [];
    const out = await executeRequest(
      this.deps.engine,
      b,
      caller,
      item,
      new AbortController().signal,
      {
        rateLimit: false,
        record: (row) => {
          // In place: the spend reservation settles with this same row after it is recorded.
          discountRow(row, discount);
          rows.push(row);
        },
        upstream: async (_provider, req): Promise<ForwardedJson> => {
          if (!req)
            throw new UpstreamError(502, 'a provider batch answers lane calls only', { retryable: false });
          return { status: 200, text: JSON.stringify(answer), json: answer, ...tap(answer, []) };
        },
      },
      { provider: entry.config.slug, discount },
    );
    if (out.kind === 'served') this.deps.writer.add({ ref, kind: 'done', result: out.result }, rows);
    // The answer itself was an error (or the provider is rate limited): the worker runs it again.
    else if (out.status >= 500 || out.status === 429)
      this.deps.writer.add({ ref, kind: 'retry', due: Date.now() }, rows);
    // Refused now (the key's guardrail or budget changed meanwhile): its error, as the worker gives it.
    else
      this.deps.writer.add(
        { ref, kind: 'done', result: failedResult(resultError(out.status, out.message)) },
        rows,
      );
  }
}

/** The provider-side custom_id of request `idx` (Anthropic allows only [a-zA-Z0-9_-]{1,64}). */
const customIdOf = (idx: number) => `gh-${idx}`;
const idxOf = (customId: string): number | null => {
  const m = /^gh-(\d+)$/.exec(customId);
  return m ? Number(m[1]) : null;
};

const round = (usd: number) => Math.round(usd * 1e12) / 1e12;

function discountRow(row: GenerationRow, discount: number): void {
  const f = 1 - discount;
  row.cost_usd = round(row.cost_usd * f);
  row.prompt_cost_usd = round(row.prompt_cost_usd * f);
  row.completion_cost_usd = round(row.completion_cost_usd * f);
}

function zeroCost(row: GenerationRow): void {
  row.cost_usd = 0;
  row.prompt_cost_usd = 0;
  row.completion_cost_usd = 0;
}

export type { NativeResult };
