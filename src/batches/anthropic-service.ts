import type { Caller } from '../accounts/caller.js';
import type { Db } from '../db/connection.js';
import { badRequest, conflict, forbidden, notFound } from '../lib/errors.js';
import { inAnthropicTerms, messageBatchBody } from './anthropic-body.js';
import { closedCounts, deleteEndedBatch, listMessageBatches } from './anthropic-store.js';
import {
  fromMessageBatchId,
  MESSAGES_ENDPOINT,
  type MessageBatch,
  processingStatus,
  resultLine,
  toMessageBatch,
  toMessageBatchId,
} from './anthropic-view.js';
import type { BatchStatus } from './model.js';
import { resultsExpired, resultsExpiredAt } from './openai-batch.js';
import type { BatchesService } from './service.js';
import * as store from './store.js';

export interface MessageBatchesDeps {
  db: Db;
  batches: BatchesService;
  /** The largest JSON text of one request (GATEHOUSE_BATCH_MAX_ITEM_BYTES). */
  maxItemBytes: number;
}

/** Builds a batch's absolute results URL from its Message Batch id (the route knows the host). */
export type ResultsUrl = (id: string) => string;

/**
 * Anthropic's Message Batches API over Gatehouse's batches: every `/v1/messages` batch of the
 * caller is a Message Batch, whether created here or through `POST /batches`. Creation, the worker,
 * the checks and the accounting are the batch engine's own; this is the Anthropic-shaped door.
 */
export class MessageBatchesService {
  constructor(private readonly deps: MessageBatchesDeps) {}

  async create(
    caller: Caller,
    body: AsyncIterable<Buffer>,
    declaredBytes: number | null,
    url: ResultsUrl,
    /** The create call's allow-listed provider headers (`anthropic-beta`, `anthropic-version`). */
    headers: Record<string, string> = {},
  ): Promise<MessageBatch> {
    apiKeyOnly(caller);
    let id: string;
    try {
      id = (
        await this.deps.batches.create(
          caller,
          messageBatchBody(body, this.deps.maxItemBytes),
          declaredBytes,
          { headers },
        )
      ).id;
    } catch (err) {
      throw inAnthropicTerms(err);
    }
    return this.get(caller, toMessageBatchId(id), url);
  }

  async get(caller: Caller, id: string, url: ResultsUrl): Promise<MessageBatch> {
    const row = await this.row(caller, id);
    return toMessageBatch(row, (await closedCounts(this.deps.db, [row])).get(row.id) ?? none, url);
  }

  async list(
    caller: Caller,
    q: { limit?: number; after_id?: string; before_id?: string },
    url: ResultsUrl,
  ): Promise<{ data: MessageBatch[]; has_more: boolean; first_id: string | null; last_id: string | null }> {
    apiKeyOnly(caller);
    if (q.after_id !== undefined && q.before_id !== undefined)
      throw badRequest('Give after_id or before_id, not both');
    const cursor = (v: string | undefined, name: string) => {
      if (v === undefined) return null;
      const id = fromMessageBatchId(v);
      if (id === null) throw badRequest(`${name} must be a message batch id (msgbatch_…)`);
      return id;
    };
    const { rows, hasMore } = await listMessageBatches(
      this.deps.db,
      { organizationId: caller.organizationId, keyHash: caller.keyHash },
      {
        limit: q.limit ?? 20,
        afterId: cursor(q.after_id, 'after_id'),
        beforeId: cursor(q.before_id, 'before_id'),
      },
    );
    const closed = await closedCounts(this.deps.db, rows);
    const data = rows.map((r) => toMessageBatch(r, closed.get(r.id) ?? none, url));
    return {
      data,
      has_more: hasMore,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
    };
  }

  async cancel(caller: Caller, id: string, url: ResultsUrl): Promise<MessageBatch> {
    const row = await this.row(caller, id);
    await this.deps.batches.cancel(caller, row.id);
    return this.get(caller, id, url);
  }

  /** Deletes an ended batch (its results with it); one still processing is refused, as by Anthropic. */
  async delete(caller: Caller, id: string): Promise<{ id: string; type: 'message_batch_deleted' }> {
    const row = await this.row(caller, id);
    if (!(await deleteEndedBatch(this.deps.db, row.id)))
      throw conflict(`Message batch ${id} has not ended: cancel it and delete it once it has ended`);
    return { id, type: 'message_batch_deleted' };
  }

  /** The results file: one `{custom_id, result}` line per request, in request order, once ended. */
  async results(caller: Caller, id: string): Promise<AsyncIterable<string>> {
    const row = await this.row(caller, id);
    if (processingStatus(row.status as BatchStatus) !== 'ended')
      throw conflict(`Message batch ${id} has not ended yet: its results are available once it has`);
    const expiredAt = resultsExpiredAt(row);
    if (expiredAt !== null) throw resultsExpired(id, expiredAt);
    const { db } = this.deps;
    return (async function* () {
      let after = -1;
      for (;;) {
        const rows = await store.results(db, row.id, { afterIdx: after, limit: 500 });
        if (rows.length === 0) return;
        yield rows.map(resultLine).join('');
        after = (rows[rows.length - 1] as store.ResultRow).idx;
      }
    })();
  }

  /** A `/v1/messages` batch of the caller's workspace by its Message Batch id, else a 404. */
  private async row(caller: Caller, id: string): Promise<store.BatchRow> {
    apiKeyOnly(caller);
    const batchId = fromMessageBatchId(id);
    const row = batchId === null ? undefined : await store.getBatch(this.deps.db, caller, batchId);
    if (!row || row.endpoint !== MESSAGES_ENDPOINT) throw notFound('Message batch');
    return row;
  }
}

const none = { canceled: 0, expired: 0 };

/** Batches are for API keys: management keys get 403 (as on the inference endpoints). */
function apiKeyOnly(caller: Caller): void {
  if (caller.isManagement) throw forbidden('Management keys cannot use message batches; use an API key');
}
