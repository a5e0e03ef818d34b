import { randomBytes } from 'node:crypto';
import type SQLite from 'better-sqlite3';
import type { BatchConfig } from '../config.js';
import type { Db } from '../db/connection.js';
import { ownFileIds } from '../files/references.js';
import { TranslationError } from '../formats/chat.js';
import { WIRES } from '../inference/wires/index.js';
import { ApiError, badRequest } from '../lib/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../lib/json-depth.js';
import type { NativeWire } from '../providers/types.js';
import { type Catalog, findModel, type ModelEntry } from '../routing/catalog.js';
import { referencesOf } from '../stored-responses/expansion.js';
import { BatchBodyError, type BatchBodyEvent, BatchBodyParser } from './body-parser.js';
import * as store from './ingest-store.js';
import {
  BATCH_ENDPOINTS,
  type BatchEndpoint,
  type BatchProviderPrefs,
  COMPLETION_WINDOWS,
  isBatchEndpoint,
} from './model.js';
import {
  type FileLines,
  inputFileGone,
  namingLine,
  parseInputFileId,
  parseMetadata,
  parseOutputExpiry,
} from './openai-batch.js';

/**
 * Reads a batch body as it arrives and writes its requests to the store in chunks, so memory stays
 * bounded whatever the body's size and whatever the order of its top-level fields. Each request is
 * validated for the endpoint as it arrives; requests that arrive before `endpoint` are validated in
 * a second pass over the stored rows once the body is complete. The first problem found is a 400
 * naming the request's index and custom_id (in document order when `endpoint` precedes `requests`).
 * The batch row stays hidden (`accepted = 0`) until the service accepts it.
 */

/** Requests written per INSERT / transaction (and the most held in memory at once). */
const CHUNK_ITEMS = 1000;
/**
 * JSON text (UTF-16 code units) held at most before a chunk is written: ~1,000 requests of ~1 KB.
 * A chunk should be written well before V8's next-but-one scavenge (its JSON texts are then copied
 * once within the young generation and die there, instead of being promoted to the old one).
 */
const CHUNK_CHARS = 1024 * 1024;
const MAX_CUSTOM_ID = 512;
const ITEM_FIELDS = new Set(['custom_id', 'body', 'method', 'url']);
const TOP_FIELDS = new Set([
  'endpoint',
  'requests',
  'completion_window',
  'model',
  'provider',
  // OpenAI's Batch API: the requests in an uploaded file (openai-batch.ts).
  'input_file_id',
  'metadata',
  'output_expires_after',
]);

/** Completion tokens assumed for a request that sets no max_tokens (the cost estimate). */
export const DEFAULT_ESTIMATE_COMPLETION_TOKENS = 1024;
/**
 * Distinct models one batch may use (without a top-level `model`): admission checks each one's
 * guardrail and prices each at its own first endpoint, so their number is bounded.
 */
export const MAX_BATCH_MODELS = 64;

/** One model's requests in a batch: token estimates summed over them, priced at admission. */
export interface ModelTally {
  /** The canonical model id. */
  model: string;
  /** Its first request (named when the model is refused). */
  index: number;
  customId: string;
  count: number;
  promptTokens: number;
  completionTokens: number;
  /** Requests without max_tokens (priced at the endpoint's limit, at most the default). */
  completionTokensUnset: number;
}

export interface IngestResult {
  endpoint: BatchEndpoint;
  completionWindow: string;
  /** The canonical model id all requests target; null when they use several. */
  model: string | null;
  provider: BatchProviderPrefs | null;
  count: number;
  bytes: number;
  /** Per model, in order of first use: the requests and their token estimates. */
  models: ModelTally[];
  /** The uploaded file the requests came from (OpenAI's `input_file_id`), and OpenAI's `metadata`. */
  inputFileId: string | null;
  metadata: Record<string, string> | null;
  /** OpenAI's `output_expires_after.seconds`: the output and error files' lifetime, or null. */
  outputExpiresAfterS: number | null;
}

let lastIdMs = 0;
let idSeq = 0;
/**
 * `batch_` + 24 hex: the creation time in ms (12), a per-process sequence within that ms (4) and
 * randomness (8). Ids sort by creation, so lists ordered by (created_at, id) are newest first even
 * for batches created within the same second.
 */
export const newBatchId = (): string => {
  const now = Date.now();
  idSeq = now === lastIdMs ? idSeq + 1 : 0;
  lastIdMs = now;
  const seq = (idSeq & 0xffff).toString(16).padStart(4, '0');
  return `batch_${now.toString(16).padStart(12, '0')}${seq}${randomBytes(4).toString('hex')}`;
};

export function payloadTooLarge(limit: number): ApiError {
  // The limit is configurable (GATEHOUSE_BATCH_MAX_BYTES): name the one in force, not the default.
  const mb = limit >= 1024 * 1024 ? ` (${Math.round((limit / (1024 * 1024)) * 10) / 10} MB)` : '';
  return new ApiError(413, `Batch input exceeds the payload limit of ${limit} bytes${mb}`);
}

const quote = (id: string) => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id);

/** A 400 naming the offending request. */
function requestError(index: number, customId: string | null, problem: string): ApiError {
  const who = customId === null ? '' : ` (custom_id ${quote(customId)})`;
  return badRequest(`requests[${index}]${who}${problem.startsWith('.') ? '' : ': '}${problem}`, {
    index,
    custom_id: customId,
  });
}

/** A parser step's events; its malformed-body error as a 400 (naming the request's index). */
export function parsedEvents(step: () => BatchBodyEvent[]): BatchBodyEvent[] {
  try {
    return step();
  } catch (err) {
    if (err instanceof BatchBodyError)
      throw badRequest(err.message, err.index !== undefined ? { index: err.index } : undefined);
    throw err;
  }
}

export class Ingestion {
  private readonly parser: BatchBodyParser;
  private endpoint: BatchEndpoint | null = null;
  private completionWindow: string | null = null;
  private batchModel: string | null = null;
  private provider: BatchProviderPrefs | null = null;
  private inputFileId: string | null = null;
  private metadata: Record<string, string> | null = null;
  private outputExpiresAfterS: number | null = null;
  private count = 0;
  /** Requests [0, deferredUpTo) arrived before `endpoint` and are validated after the body. */
  private deferredUpTo = 0;
  /** The models of the validated requests, in order of first use (at most MAX_BATCH_MODELS). */
  private readonly models = new Map<string, ModelTally>();
  /** The requests read and not yet written (indexes chunkFirst, chunkFirst + 1, …). */
  private chunkFirst = 0;
  private chunkIds: string[] = [];
  private chunkItems: string[] = [];
  private chunkChars = 0;
  /** SQLite: writes the chunks through the better-sqlite3 handle (null on PostgreSQL). */
  private readonly sqliteWriter: store.SqliteItemWriter | null;

  /**
   * `sqlite`: the better-sqlite3 handle behind `db` when it is SQLite (`DbHandle.sqlite`); requests
   * are then written with a prepared statement instead of Kysely's multi-row INSERT.
   */
  constructor(
    private readonly db: Db,
    private readonly catalog: Catalog,
    private readonly config: BatchConfig,
    readonly batchId: string,
    sqlite?: SQLite.Database | null,
    /** Whether a provider of the model serves the wire natively (its bodies go as sent). */
    private readonly native: (model: ModelEntry, wire: NativeWire) => boolean = () => false,
    /** The caller's uploaded batch file of this id (`input_file_id`), or null. */
    private readonly fileLines: (id: string) => Promise<FileLines | null> = async () => null,
  ) {
    this.parser = new BatchBodyParser({ maxItemBytes: config.maxItemBytes });
    this.sqliteWriter = sqlite ? new store.SqliteItemWriter(db, sqlite) : null;
  }

  /** Reads the whole body; throws ApiError (400/413) on the first problem. */
  async read(body: AsyncIterable<Buffer>): Promise<IngestResult> {
    let bytes = 0;
    try {
      for await (const chunk of body) {
        bytes += chunk.length;
        if (bytes > this.config.maxBytes) throw payloadTooLarge(this.config.maxBytes);
        for (const event of this.parse(() => this.parser.write(chunk))) {
          const flushing = this.onEvent(event);
          if (flushing) await flushing;
        }
      }
      this.parse(() => {
        this.parser.end();
        return [];
      });
      await this.flush();
      if (this.inputFileId !== null && this.endpoint !== null) bytes = await this.readFile(this.inputFileId);
    } finally {
      this.sqliteWriter?.close();
    }
    if (this.endpoint === null)
      throw badRequest(`endpoint is required: one of ${Object.keys(BATCH_ENDPOINTS).join(', ')}`);
    if (this.completionWindow === null) throw badRequest('completion_window is required: 24h');
    if (this.count === 0)
      throw badRequest('requests is required: an array of at least one {custom_id, body}');
    if (this.deferredUpTo > 0) await this.validateStored();
    const models = [...this.models.values()];
    if (models.length === 0) throw badRequest('requests must contain at least one request');
    return {
      endpoint: this.endpoint,
      completionWindow: this.completionWindow,
      model: models.length === 1 ? (models[0] as ModelTally).model : null,
      provider: this.provider,
      count: this.count,
      bytes,
      models,
      inputFileId: this.inputFileId,
      metadata: this.metadata,
      outputExpiresAfterS: this.outputExpiresAfterS,
    };
  }

  /**
   * The requests of an uploaded file (`input_file_id`), read as if they had been sent inline;
   * refusals name the file's line. Returns the file's size.
   */
  private async readFile(id: string): Promise<number> {
    if (this.count > 0) throw badRequest('Send the requests inline or as input_file_id, not both');
    const file = await this.fileLines(id);
    if (!file) throw inputFileGone(id);
    const lineOf: number[] = [];
    try {
      for await (const { line, text } of file.lines) {
        const index = lineOf.length;
        lineOf.push(line);
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (err) {
          throw requestError(index, null, `not valid JSON (${(err as Error).message})`);
        }
        if (typeof value !== 'object' || value === null || Array.isArray(value))
          throw requestError(index, null, 'must be a JSON object');
        const flushing = this.onEvent({ kind: 'request', index, value, raw: text });
        if (flushing) await flushing;
      }
      await this.flush();
    } catch (err) {
      throw namingLine(err, id, lineOf);
    }
    return file.bytes;
  }

  private parse(step: () => BatchBodyEvent[]): BatchBodyEvent[] {
    return parsedEvents(step);
  }

  /** Handles one event; returns a promise only when a chunk of requests is being written. */
  private onEvent(e: BatchBodyEvent): Promise<void> | undefined {
    if (e.kind === 'field') {
      this.onField(e.name, e.value);
      return undefined;
    }
    const item = e.value as Record<string, unknown>;
    const customId = item.custom_id;
    if (typeof customId !== 'string' || customId.length === 0)
      throw requestError(e.index, null, 'custom_id must be a non-empty string');
    if (customId.length > MAX_CUSTOM_ID)
      throw requestError(
        e.index,
        customId.slice(0, 80),
        `custom_id must be at most ${MAX_CUSTOM_ID} characters`,
      );
    if (this.endpoint) this.validate(e.index, item, customId, e.raw.length);
    else this.deferredUpTo = e.index + 1;
    this.count = e.index + 1;
    if (this.chunkItems.length === 0) this.chunkFirst = e.index;
    this.chunkIds.push(customId);
    this.chunkItems.push(e.raw);
    this.chunkChars += e.raw.length;
    if (this.chunkItems.length >= CHUNK_ITEMS || this.chunkChars >= CHUNK_CHARS) return this.flush();
    return undefined;
  }

  private onField(name: string, value: unknown): void {
    if (!TOP_FIELDS.has(name)) throw badRequest(`Unknown field "${name}"`);
    switch (name) {
      case 'endpoint':
        if (!isBatchEndpoint(value))
          throw badRequest(`endpoint must be one of ${Object.keys(BATCH_ENDPOINTS).join(', ')}`);
        this.endpoint = value;
        return;
      case 'completion_window':
        if (!(COMPLETION_WINDOWS as readonly unknown[]).includes(value))
          throw badRequest(`completion_window must be one of ${COMPLETION_WINDOWS.join(', ')}`);
        this.completionWindow = value as string;
        return;
      case 'model': {
        if (typeof value !== 'string' || value === '') throw badRequest('model must be a non-empty string');
        this.batchModel = value;
        // Requests read before it: the first of another model is refused.
        const other = [...this.models.values()].find((m) => m.model !== this.canonical(value));
        if (other)
          throw requestError(other.index, other.customId, `.body.model: must be the batch's model ${value}`);
        return;
      }
      case 'provider':
        this.provider = parseBatchProvider(value);
        return;
      case 'input_file_id':
        this.inputFileId = parseInputFileId(value);
        return;
      case 'metadata':
        this.metadata = parseMetadata(value);
        return;
      case 'output_expires_after':
        this.outputExpiresAfterS = parseOutputExpiry(value);
        return;
    }
  }

  /** Validates one request for the endpoint and adds it to the cost estimate. */
  private validate(index: number, item: Record<string, unknown>, customId: string, rawLength: number): void {
    const endpoint = this.endpoint as BatchEndpoint;
    for (const k of Object.keys(item)) {
      if (!ITEM_FIELDS.has(k)) throw requestError(index, customId, `unknown field "${k}"`);
    }
    if (item.method !== undefined && item.method !== 'POST')
      throw requestError(index, customId, '.method: must be POST');
    if (item.url !== undefined && item.url !== endpoint)
      throw requestError(index, customId, `.url: must be the batch's endpoint ${endpoint}`);
    const body = item.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw requestError(index, customId, '.body: must be an object');
    // As on the synchronous endpoints: the worker's recursive walks (filters, translation) must
    // not meet a body nested thousands deep.
    if (nestsDeeperThan(body))
      throw requestError(index, customId, `.body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    const b = body as Record<string, unknown>;
    if (b.stream === true)
      throw requestError(index, customId, '.body.stream: streaming is not supported in batches');
    if (typeof b.model !== 'string' || b.model === '')
      throw requestError(index, customId, '.body.model: a model id is required');
    // Presets complete a body at call time (presets/): a batch's requests are run as they were
    // admitted, so one naming a preset is refused rather than run without it.
    if ((b.preset !== undefined && b.preset !== null) || b.model.includes('@preset/'))
      throw requestError(
        index,
        customId,
        '.body: presets are not applied in batches; name the model and settings',
      );
    const model = b.model;
    const limit = [b.max_completion_tokens, b.max_tokens, b.max_output_tokens].find(
      (n): n is number => typeof n === 'number' && Number.isInteger(n) && n > 0,
    );
    const maxTokens = BATCH_ENDPOINTS[endpoint] === 'embeddings' ? 0 : limit;
    const entry = findModel(this.catalog, model);
    if (!entry) throw requestError(index, customId, `.body.model: model ${model} not found`);
    const kind = BATCH_ENDPOINTS[endpoint] === 'embeddings' ? 'embeddings' : 'chat';
    if (entry.kind !== kind)
      throw requestError(
        index,
        customId,
        `.body.model: ${entry.id} is not ${kind === 'chat' ? 'a chat' : 'an embeddings'} model`,
      );
    // Files named by id are put into a call as it is served, which a batch's requests are not:
    // their id would reach a provider that has no such file.
    const format = BATCH_ENDPOINTS[endpoint];
    if (format !== 'embeddings' && ownFileIds(format, b).size > 0)
      throw requestError(
        index,
        customId,
        '.body: files named by id (file_id) are not supported in batches (send the file as file_data or a base64 source)',
      );
    // A body the endpoint's translation refuses is refused now, as the synchronous endpoint would —
    // unless a provider of the model takes the caller's format as it is (a pass-through lane).
    const wire = WIRES[BATCH_ENDPOINTS[endpoint]];
    if (!this.native(entry, wire.native)) {
      try {
        wire.parse(b);
      } catch (err) {
        if (err instanceof TranslationError) throw requestError(index, customId, `.body.${err.message}`);
        throw err;
      }
    }
    // Stored state is not read in batches: a reference would otherwise reach a provider that holds
    // every tenant's responses under the operator's key (OpenAI's, on a pass-through lane).
    if (BATCH_ENDPOINTS[endpoint] === 'responses') {
      let refs: ReturnType<typeof referencesOf>;
      try {
        refs = referencesOf(b);
      } catch (err) {
        if (err instanceof ApiError) throw requestError(index, customId, `.body.${err.message}`);
        throw err;
      }
      if (refs.previousResponseId !== null || refs.conversationId !== null || refs.itemIds.length > 0)
        throw requestError(
          index,
          customId,
          '.body: previous_response_id, conversation and item_reference inputs are not supported in batches (send the whole input)',
        );
    }
    if (this.batchModel !== null && this.canonical(this.batchModel) !== entry.id)
      throw requestError(index, customId, `.body.model: must be the batch's model ${this.batchModel}`);
    let tally = this.models.get(entry.id);
    if (!tally) {
      if (this.models.size >= MAX_BATCH_MODELS)
        throw requestError(
          index,
          customId,
          `.body.model: a batch may use at most ${MAX_BATCH_MODELS} different models (${entry.id} would be one more)`,
        );
      tally = {
        model: entry.id,
        index,
        customId,
        count: 0,
        promptTokens: 0,
        completionTokens: 0,
        completionTokensUnset: 0,
      };
      this.models.set(entry.id, tally);
    }
    // Estimate: 4 characters a token for the whole item (a ceiling for the prompt), and the
    // request's max tokens (or DEFAULT_ESTIMATE_COMPLETION_TOKENS) for the completion.
    tally.count += 1;
    tally.promptTokens += Math.ceil(rawLength / 4);
    if (maxTokens === undefined) tally.completionTokensUnset += 1;
    else tally.completionTokens += maxTokens;
  }

  private canonical(slug: string): string {
    return findModel(this.catalog, slug)?.id ?? slug;
  }

  /** Writes the buffered requests; a custom_id already in the batch is the first duplicate's 400. */
  private async flush(): Promise<void> {
    if (this.chunkItems.length === 0) return;
    const chunk: store.ItemChunk = {
      first: this.chunkFirst,
      customIds: this.chunkIds,
      items: this.chunkItems,
    };
    this.chunkIds = [];
    this.chunkItems = [];
    this.chunkChars = 0;
    let dup: store.Duplicate | null;
    if (this.sqliteWriter) dup = await this.sqliteWriter.write(this.batchId, chunk, Date.now());
    else {
      dup = await store.insertItems(this.db, this.batchId, chunk);
      if (!dup) await store.touchBatch(this.db, this.batchId, Date.now());
    }
    if (dup)
      throw requestError(dup.idx, dup.custom_id, `duplicate custom_id (also requests[${dup.earlier}])`);
  }

  /** Validates the requests that arrived before `endpoint`, reading them back in pages. */
  private async validateStored(): Promise<void> {
    let after = -1;
    while (after < this.deferredUpTo - 1) {
      const rows = await store.itemsAfter(this.db, this.batchId, after, CHUNK_ITEMS);
      if (rows.length === 0) break;
      for (const r of rows) {
        if (r.idx >= this.deferredUpTo) return;
        this.validate(r.idx, JSON.parse(r.item) as Record<string, unknown>, r.custom_id, r.item.length);
        after = r.idx;
      }
    }
  }
}

/** The batch-level `provider` object: only `only` and `allow_fallbacks` are supported (seed). */
export function parseBatchProvider(value: unknown): BatchProviderPrefs | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest('provider must be an object');
  const out: BatchProviderPrefs = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === 'only') {
      if (!Array.isArray(v) || !v.every((s) => typeof s === 'string' && s.length > 0))
        throw badRequest('provider.only must be an array of provider slugs');
      out.only = v as string[];
    } else if (k === 'allow_fallbacks') {
      if (typeof v !== 'boolean') throw badRequest('provider.allow_fallbacks must be a boolean');
      out.allow_fallbacks = v;
    } else {
      throw badRequest(`provider.${k} is not supported in batches; only "only" and "allow_fallbacks" are`);
    }
  }
  return out;
}
