import type SQLite from 'better-sqlite3';
import type { Caller } from '../accounts/caller.js';
import type { BatchConfig } from '../config.js';
import type { SpendTracker } from '../credits/spend.js';
import type { Db } from '../db/connection.js';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../lib/errors.js';
import type { Catalog } from '../routing/catalog.js';
import type { Engine } from '../routing/engine.js';
import type { ProviderPreferences } from '../routing/preferences.js';
import type { RateLimiter } from '../routing/rate-limit.js';
import {
  DEFAULT_ESTIMATE_COMPLETION_TOKENS,
  Ingestion,
  type IngestResult,
  type ModelTally,
  newBatchId,
  payloadTooLarge,
} from './ingest.js';
import { BATCH_ENDPOINTS, type Batch, type BatchStatus, closingErrors, FINAL_STATUSES } from './model.js';
import { batchesAfter, resultsExpired, resultsExpiredAt } from './openai-batch.js';
import type { BatchFilesService } from './openai-files.js';
import * as store from './store.js';
import { toBatch, toResult } from './view.js';

export interface BatchesDeps {
  db: Db;
  /** The better-sqlite3 handle behind `db` on SQLite: ingestion writes through prepared statements. */
  sqlite?: SQLite.Database | null;
  engine: Engine;
  catalog: Catalog;
  spend: Pick<SpendTracker, 'checkBalance'>;
  config: BatchConfig;
  /** Batch creations per key (429 beyond). */
  limiter: RateLimiter;
  /** Uploaded batch files (OpenAI's `input_file_id`). */
  files?: Pick<BatchFilesService, 'linesOf'>;
}

/** What a front door adds to a batch besides its body. */
export interface BatchOptions {
  /**
   * The caller's provider headers of the create call, already allow-listed (the batch endpoints'
   * allow-lists: `anthropic-version`, `anthropic-beta`, …): each request runs as if it had carried
   * those its endpoint forwards. Stored with the batch (`headers_json`), so they outlive a restart.
   */
  headers?: Record<string, string>;
}

/** Results per poll page at most, and by default. */
export const MAX_RESULTS_PAGE = 1000;
export const DEFAULT_RESULTS_PAGE = 100;

/**
 * Batches for the API: creation (streamed ingestion, validation, admission against the caller's
 * guardrails and balance), polling with paged results, the JSONL download, listing and cancel.
 * The worker (worker.ts) runs what is accepted here.
 */
export class BatchesService {
  private readonly acceptedListeners: (() => void)[] = [];
  /** Creations still reading their body (awaited on shutdown: see `drain`). */
  private readonly ingesting = new Set<Promise<unknown>>();

  constructor(private readonly deps: BatchesDeps) {}

  /** Calls `listener` after each accepted batch (the in-process worker starts on it at once). */
  onAccepted(listener: () => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * Reads, validates and stores a batch body, then admits it: 202-able once this resolves. On any
   * refusal nothing is kept. `declaredBytes` is the Content-Length, when sent (413 before reading).
   */
  async create(
    caller: Caller,
    body: AsyncIterable<Buffer>,
    declaredBytes: number | null,
    options: BatchOptions = {},
  ): Promise<Batch> {
    const run = this.ingest(caller, body, declaredBytes, options);
    this.ingesting.add(run);
    try {
      return await run;
    } finally {
      this.ingesting.delete(run);
    }
  }

  /**
   * Waits until no creation is running. On shutdown the server has closed the connections of
   * uploads still arriving: each then removes its partial batch, which must happen before the
   * database closes (else it would stay, never accepted, until the worker's abandoned-upload sweep).
   */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.ingesting]);
  }

  private async ingest(
    caller: Caller,
    body: AsyncIterable<Buffer>,
    declaredBytes: number | null,
    options: BatchOptions,
  ): Promise<Batch> {
    const { db, config } = this.deps;
    if (caller.isManagement) throw forbidden('Management keys cannot create batches; use an API key');
    if (declaredBytes !== null && declaredBytes > config.maxBytes) throw payloadTooLarge(config.maxBytes);
    const rate = await this.deps.limiter.consume(caller.keyHash);
    if (!rate.ok)
      throw new ApiError(
        429,
        `Batch rate limit exceeded for this key (${config.rateLimit} per ${config.rateLimitWindowSeconds} s); retry in ${Math.ceil(rate.retryAfterMs / 1000)} s`,
        { retry_after_ms: rate.retryAfterMs },
      );

    const id = newBatchId();
    const created = Math.floor(Date.now() / 1000);
    await store.createBatch(db, {
      id,
      organization_id: caller.organizationId,
      workspace_id: caller.workspaceId,
      key_hash: caller.keyHash,
      user_id: caller.userId,
      endpoint: '',
      completion_window: '24h',
      status: 'validating',
      created_at: created,
      expires_at: created + config.windowSeconds,
      updated_at_ms: Date.now(),
    });
    try {
      const ingested = await new Ingestion(
        db,
        this.deps.catalog,
        config,
        id,
        this.deps.sqlite,
        (m, w) => this.deps.engine.servesNatively(m, w),
        async (fileId) => {
          await store.noteInputFile(db, id, fileId);
          return (await this.deps.files?.linesOf(caller, fileId)) ?? null;
        },
      ).read(body);
      const estimate = await this.admit(caller, ingested);
      await store.acceptBatch(db, id, {
        endpoint: ingested.endpoint,
        model: ingested.model,
        provider_json: ingested.provider ? JSON.stringify(ingested.provider) : null,
        request_count: ingested.count,
        input_bytes: ingested.bytes,
        estimated_cost_usd: estimate,
        updated_at_ms: Date.now(),
        input_file_id: ingested.inputFileId,
        metadata_json: ingested.metadata ? JSON.stringify(ingested.metadata) : null,
        output_expires_after_s: ingested.outputExpiresAfterS,
        headers_json:
          options.headers && Object.keys(options.headers).length > 0 ? JSON.stringify(options.headers) : null,
      });
    } catch (err) {
      await store.deleteBatch(db, id).catch(() => {});
      throw err;
    }
    // Read before waking the worker: the 202 shows the batch as accepted (`validating`), not as
    // whatever a worker woken by it has made of it meanwhile.
    const accepted = await this.get(caller, id);
    for (const listener of this.acceptedListeners) listener();
    return accepted;
  }

  /**
   * The guardrail (each model and its providers, key limits and budgets: 403) and, when credits are
   * enforced, the balance (402): the estimate prices every request at the first endpoint that
   * would serve its model, summed over the batch's models. Returns the estimate.
   */
  private async admit(caller: Caller, b: IngestResult): Promise<number> {
    let estimate = 0;
    let paid = false;
    for (const tally of b.models) {
      const usd = await this.admitModel(caller, b, tally);
      if (usd === null) continue;
      paid = true;
      estimate += usd;
    }
    // Only BYOK: the provider bills the organization's own account, not its credits.
    if (!paid) return 0;
    const paying = await this.deps.spend.checkBalance(caller.organizationId, {
      cost: { usd: estimate, of: "this batch's estimated cost" },
    });
    if (!paying.ok) throw new ApiError(402, paying.reason);
    return estimate;
  }

  /** One model of a batch through the guardrail; its requests' estimated cost (null: BYOK). */
  private async admitModel(caller: Caller, b: IngestResult, m: ModelTally): Promise<number | null> {
    const kind = BATCH_ENDPOINTS[b.endpoint] === 'embeddings' ? 'embeddings' : 'chat';
    const prefs: ProviderPreferences = { ...(b.provider ?? {}) };
    const { candidates } = await this.deps.engine.admitBatch(caller, m.model, kind, prefs);
    const first = candidates[0];
    if (!first || first.credential.isByok) return null;
    const p = first.endpoint.pricing;
    const maxCompletion = first.endpoint.maxCompletionTokens ?? DEFAULT_ESTIMATE_COMPLETION_TOKENS;
    const completionTokens =
      m.completionTokens +
      m.completionTokensUnset * Math.min(maxCompletion, DEFAULT_ESTIMATE_COMPLETION_TOKENS);
    return (m.promptTokens * p.prompt + completionTokens * p.completion) / 1e6 + (p.request ?? 0) * m.count;
  }

  /** A batch of the caller's workspace with a page of its results (by request index). */
  async get(
    caller: Caller,
    id: string,
    page: { offset: number; limit: number } = { offset: 0, limit: DEFAULT_RESULTS_PAGE },
  ): Promise<Batch> {
    const { db } = this.deps;
    const row = await store.getBatch(db, caller, id);
    if (!row) throw notFound('Batch');
    const batch = toBatch(row);
    // Expired with its output files: the batch and its counts stay, its results are not served.
    const expiredAt = resultsExpiredAt(row);
    if (expiredAt !== null) {
      batch.results = [];
      batch.results_page = { offset: page.offset, limit: page.limit, total: 0, has_more: false };
      batch.results_expired_at = expiredAt;
      return batch;
    }
    const rows = page.limit > 0 ? await store.results(db, id, page) : [];
    const finished = row.completed_count + row.failed_count;
    batch.results = rows.map((r) => toResult(id, r));
    batch.results_page = {
      offset: page.offset,
      limit: page.limit,
      total: finished,
      has_more: page.offset + rows.length < finished,
    };
    return batch;
  }

  /**
   * The caller's (this key's) batches, newest first, without results: a page by `offset`, or after
   * the `after` batch (OpenAI's cursor), with OpenAI's list fields beside `total_count`.
   */
  async list(caller: Caller, offset: number, limit: number, after?: string) {
    const { db } = this.deps;
    let { rows, total } = await store.listBatches(
      db,
      caller.organizationId,
      caller.keyHash,
      offset,
      limit + 1,
    );
    if (after !== undefined) {
      const next = await batchesAfter(db, caller, after, limit + 1);
      if (!next) throw badRequest(`after: no batch ${after} of this key`);
      rows = next;
    }
    const data = rows.slice(0, limit).map(toBatch);
    return {
      object: 'list' as const,
      data,
      total_count: total,
      has_more: rows.length > limit,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
    };
  }

  /**
   * validating / in_progress → cancelling: requests not started get a `cancelled` error now;
   * running ones finish (their results are kept); the worker then moves it to cancelled.
   */
  async cancel(caller: Caller, id: string): Promise<Batch> {
    const { db } = this.deps;
    const row = await store.getBatch(db, caller, id);
    if (!row) throw notFound('Batch');
    const status = row.status as BatchStatus;
    if (status === 'cancelling' || status === 'cancelled') return this.get(caller, id);
    if (FINAL_STATUSES.includes(status) || status === 'finalizing')
      throw conflict(`Batch is ${status} and can no longer be cancelled`);
    const now = Date.now();
    if (
      await store.transition(db, id, ['validating', 'in_progress'], 'cancelling', {
        cancelling_at: Math.floor(now / 1000),
      })
    ) {
      await store.closeUnfinished(db, id, JSON.stringify(closingErrors.cancelled()), 'idle', now);
      if ((await store.unfinishedCount(db, id)) === 0)
        await store.transition(db, id, ['cancelling'], 'cancelled', {
          finalized_at: Math.floor(Date.now() / 1000),
        });
    }
    return this.get(caller, id);
  }

  /** Every finished result as JSON Lines, in request order, read from the store page by page. */
  async resultsJsonl(caller: Caller, id: string): Promise<AsyncIterable<string>> {
    const { db } = this.deps;
    const row = await store.getBatch(db, caller, id);
    if (!row) throw notFound('Batch');
    const expiredAt = resultsExpiredAt(row);
    if (expiredAt !== null) throw resultsExpired(id, expiredAt);
    return (async function* () {
      let after = -1;
      for (;;) {
        const rows = await store.results(db, id, { afterIdx: after, limit: 500 });
        if (rows.length === 0) return;
        yield rows.map((r) => `${JSON.stringify(toResult(id, r))}\n`).join('');
        after = (rows[rows.length - 1] as store.ResultRow).idx;
      }
    })();
  }
}
