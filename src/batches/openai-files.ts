import type { Readable } from 'node:stream';
import type { Caller } from '../accounts/caller.js';
import type { BatchConfig } from '../config.js';
import type { Db, Dialect } from '../db/connection.js';
import { ApiError, badRequest, forbidden, notFound } from '../lib/errors.js';
import { payloadTooLarge } from './ingest.js';
import { isBatchEndpoint } from './model.js';
import {
  derivedExpiresAt,
  errorFileId,
  type FileLines,
  inputFileGone,
  outputFileId,
} from './openai-batch.js';
import * as files from './openai-files-store.js';
import * as store from './store.js';
import { toResult } from './view.js';

/**
 * OpenAI's Files API for batches: upload a JSONL file of requests (purpose `batch`), list, read,
 * download and delete it, and read a batch's output and error files, which are derived from its
 * stored results (never copied). A batch is created from an uploaded file by POST /batches with
 * `input_file_id` (the ingestion reads the file's lines through `linesOf`).
 */

/** OpenAI's File object. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  /** `batch` and `batch_output`, or a model input file's (files/input-files.ts). */
  purpose: 'batch' | 'batch_output' | 'user_data' | 'assistants' | 'vision';
  status: 'processed';
  expires_at: number | null;
  status_details: null;
}

/** Content characters per stored chunk (whole lines; a longer line is a chunk of its own). */
const CHUNK_CHARS = 1024 * 1024;
/** `expires_after.seconds` bounds (OpenAI's: one hour to 30 days). */
const MIN_EXPIRY_S = 3600;
const MAX_EXPIRY_S = 30 * 24 * 3600;

const DERIVED = /^file-(batch_[0-9a-f]{24})_(output|error)$/;

/** A batch's output (successful requests) or error (failed requests) lines, in request order. */
async function* resultLines(db: Db, batchId: string, kind: 'output' | 'error'): AsyncGenerator<string> {
  let after = -1;
  for (;;) {
    const rows = await store.results(db, batchId, { afterIdx: after, limit: 500 });
    if (rows.length === 0) return;
    let text = '';
    for (const r of rows) {
      if ((r.error_json === null) !== (kind === 'output')) continue;
      const item = toResult(batchId, r);
      // OpenAI's error lines carry `code`; Gatehouse's own fields stay beside it.
      const line = item.error ? { ...item, error: { code: item.error.error_type, ...item.error } } : item;
      text += `${JSON.stringify(line)}\n`;
    }
    if (text) yield text;
    after = (rows[rows.length - 1] as store.ResultRow).idx;
  }
}

/** An upload read and stored, not yet shown (its purpose and expiry come with the rest of the form). */
export interface ReceivedFile {
  id: string;
  filename: string;
  bytes: number;
  lines: number;
  createdAt: number;
}

/**
 * When a file made at `createdAt` expires, from OpenAI's `expires_after[seconds]` (one hour to 30
 * days; null: never). Another value is a 400 naming it.
 */
export function expiryOf(seconds: number | null, createdAt: number): number | null {
  if (seconds === null) return null;
  if (!(Number.isInteger(seconds) && seconds >= MIN_EXPIRY_S && seconds <= MAX_EXPIRY_S))
    throw badRequest(`expires_after[seconds] must be an integer from ${MIN_EXPIRY_S} to ${MAX_EXPIRY_S}`);
  return createdAt + seconds;
}

const lineError = (line: number, problem: string) =>
  badRequest(`Line ${line} of the file: ${problem}`, { line });

export class BatchFilesService {
  /** Sizes of derived files, which never change once their batch is final (bounded). */
  private readonly derivedBytes = new Map<string, number>();

  constructor(private readonly deps: { db: Db; dialect: Dialect; config: BatchConfig }) {}

  /** Files are for API keys: management keys get 403 (as on batches). */
  private owner(caller: Caller): Caller {
    if (caller.isManagement) throw forbidden('Management keys cannot use files; use an API key');
    return caller;
  }

  /**
   * Stores an uploaded file as it arrives (whole lines per chunk, never the whole file in memory),
   * checking that every line is a batch request `{custom_id, method: "POST", url, body}` for one
   * endpoint Gatehouse batches. On any refusal nothing is kept. The file stays hidden until `finish`.
   */
  async receive(caller: Caller, filename: string, content: Readable): Promise<ReceivedFile> {
    const { db, config } = this.deps;
    const owner = this.owner(caller);
    const now = Math.floor(Date.now() / 1000);
    const id = files.newFileId();
    await files.createFile(db, {
      id,
      organization_id: owner.organizationId,
      workspace_id: owner.workspaceId,
      filename: filename || 'upload.jsonl',
      purpose: 'batch',
      created_at: now,
      expires_at: null,
    });
    try {
      const decoder = new TextDecoder('utf-8', { fatal: true });
      let bytes = 0;
      let lineNo = 0;
      let requests = 0;
      let url: string | null = null;
      let carry = '';
      let chunk = '';
      let seq = 0;
      const check = (line: string) => {
        lineNo++;
        if (Buffer.byteLength(line) > config.maxItemBytes)
          throw new ApiError(413, `Line ${lineNo} of the file is larger than ${config.maxItemBytes} bytes`, {
            line: lineNo,
          });
        if (line.trim() === '') return;
        requests++;
        let item: unknown;
        try {
          item = JSON.parse(line);
        } catch (err) {
          throw lineError(lineNo, `not valid JSON (${(err as Error).message})`);
        }
        if (typeof item !== 'object' || item === null || Array.isArray(item))
          throw lineError(lineNo, 'must be a JSON object {custom_id, method, url, body}');
        const r = item as Record<string, unknown>;
        if (typeof r.custom_id !== 'string' || r.custom_id === '')
          throw lineError(lineNo, 'custom_id must be a non-empty string');
        if (r.method !== 'POST') throw lineError(lineNo, 'method must be "POST"');
        if (!isBatchEndpoint(r.url))
          throw lineError(
            lineNo,
            'url must be one of /v1/chat/completions, /v1/responses, /v1/messages, /v1/embeddings',
          );
        if (url !== null && r.url !== url)
          throw lineError(lineNo, `url must be the same on every line (the first line has ${url})`);
        url = r.url;
        if (typeof r.body !== 'object' || r.body === null || Array.isArray(r.body))
          throw lineError(lineNo, 'body must be a JSON object');
      };
      const store = async (force: boolean) => {
        if (chunk.length === 0 || (!force && chunk.length < CHUNK_CHARS)) return;
        await files.appendChunk(db, id, seq++, chunk);
        chunk = '';
      };
      const take = async (text: string) => {
        carry += text;
        let nl = carry.indexOf('\n');
        let from = 0;
        while (nl >= 0) {
          const line = carry.slice(from, nl + 1);
          check(line);
          chunk += line;
          from = nl + 1;
          nl = carry.indexOf('\n', from);
        }
        carry = carry.slice(from);
        if (carry.length > config.maxItemBytes)
          throw new ApiError(
            413,
            `Line ${lineNo + 1} of the file is larger than ${config.maxItemBytes} bytes`,
            {
              line: lineNo + 1,
            },
          );
        await store(false);
      };
      for await (const buf of content as AsyncIterable<Buffer>) {
        bytes += buf.length;
        if (bytes > config.maxBytes) throw payloadTooLarge(config.maxBytes);
        try {
          await take(decoder.decode(buf, { stream: true }));
        } catch (err) {
          if (err instanceof TypeError) throw badRequest('The file is not UTF-8 text');
          throw err;
        }
      }
      let rest: string;
      try {
        rest = decoder.decode();
      } catch {
        throw badRequest('The file is not UTF-8 text');
      }
      await take(rest);
      if (carry !== '') {
        check(carry);
        chunk += carry;
      }
      await store(true);
      if (requests === 0)
        throw badRequest('The file holds no requests: one JSON object per line is expected');
      return { id, filename: filename || 'upload.jsonl', bytes, lines: requests, createdAt: now };
    } catch (err) {
      await files.deleteFile(db, id).catch(() => {});
      throw err;
    }
  }

  /** Shows a received file with its purpose (`batch`) and optional `expires_after` seconds. */
  async finish(received: ReceivedFile, expiresAfterSeconds: number | null): Promise<FileObject> {
    let expiresAt: number | null;
    try {
      expiresAt = expiryOf(expiresAfterSeconds, received.createdAt);
    } catch (err) {
      await this.discard(received);
      throw err;
    }
    await files.completeFile(this.deps.db, received.id, {
      bytes: received.bytes,
      line_count: received.lines,
      purpose: 'batch',
      expires_at: expiresAt,
    });
    return {
      id: received.id,
      object: 'file',
      bytes: received.bytes,
      created_at: received.createdAt,
      filename: received.filename,
      purpose: 'batch',
      status: 'processed',
      expires_at: expiresAt,
      status_details: null,
    };
  }

  /** Removes a received file that is refused after all (its form had another purpose). */
  async discard(received: ReceivedFile): Promise<void> {
    await files.deleteFile(this.deps.db, received.id);
  }

  async get(caller: Caller, id: string): Promise<FileObject> {
    return (await this.record(caller, id)).view;
  }

  /** A file of the caller's workspace: its OpenAI view, and a model input file's media type. */
  async record(caller: Caller, id: string): Promise<{ view: FileObject; mimeType: string | null }> {
    const owner = this.owner(caller);
    const derived = DERIVED.exec(id);
    if (derived) {
      const batch = await files.finalBatch(
        this.deps.db,
        owner,
        derived[1] as string,
        Math.floor(Date.now() / 1000),
      );
      const kind = derived[2] as 'output' | 'error';
      if (!batch || (kind === 'output' ? batch.completed_count : batch.failed_count) === 0)
        throw notFound('File');
      return { view: await this.derivedView(batch, kind), mimeType: null };
    }
    const row = await files.getFile(this.deps.db, owner, id, Math.floor(Date.now() / 1000));
    if (!row) throw notFound('File');
    return { view: uploadedView(row), mimeType: row.mime_type };
  }

  async delete(caller: Caller, id: string): Promise<{ id: string; object: 'file'; deleted: true }> {
    const owner = this.owner(caller);
    if (DERIVED.test(id)) {
      await this.get(caller, id); // 404 when it is not the caller's
      throw new ApiError(
        400,
        "A batch's output and error files are its results and cannot be deleted on their own",
      );
    }
    const row = await files.getFile(this.deps.db, owner, id, Math.floor(Date.now() / 1000));
    if (!row) throw notFound('File');
    // Batches created from the file hold their own copy of its requests: deleting it stops none.
    await files.deleteFile(this.deps.db, id);
    return { id, object: 'file', deleted: true };
  }

  /**
   * A file's content: the uploaded bytes as stored (a model input file's decoded from its base64),
   * or a batch's output / error lines; `mimeType` is a model input file's (else JSON Lines).
   */
  async content(
    caller: Caller,
    id: string,
  ): Promise<{ filename: string; mimeType: string | null; body: AsyncIterable<string | Buffer> }> {
    const { view, mimeType } = await this.record(caller, id);
    const db = this.deps.db;
    const derived = DERIVED.exec(id);
    if (derived)
      return {
        filename: view.filename,
        mimeType: null,
        body: resultLines(db, derived[1] as string, derived[2] as 'output' | 'error'),
      };
    const binary = mimeType !== null;
    return {
      filename: view.filename,
      mimeType,
      body: (async function* () {
        for await (const data of files.chunkData(db, id)) yield binary ? Buffer.from(data, 'base64') : data;
      })(),
    };
  }

  /**
   * The requests of an uploaded batch file of the caller's workspace, line by line (blank lines
   * left out), for the ingestion; null when there is no such file.
   *
   * A `DELETE /files/{id}` may land while they are read (it removes the chunks, then the row; no
   * lock is held across the read): chunks read before it are whole, those after it are gone. So the
   * read counts its requests against the file's own count and, short of it, ends in the file's 404 —
   * the batch is then refused and removed, never created from part of its file. A deletion after
   * the last chunk was read takes nothing from the batch, which holds its own copy of the requests.
   */
  async linesOf(owner: Caller, id: string): Promise<FileLines | null> {
    const db = this.deps.db;
    const row = await files.getFile(db, owner, id, Math.floor(Date.now() / 1000));
    if (row?.purpose !== 'batch') return null;
    const expected = Number(row.line_count);
    return {
      bytes: Number(row.bytes),
      lines: (async function* () {
        let after = -1;
        let lineNo = 0;
        let requests = 0;
        for (;;) {
          const rows = await files.chunks(db, id, after, 4);
          if (rows.length === 0) {
            if (requests !== expected) throw inputFileGone(id);
            return;
          }
          for (const r of rows) {
            // Chunks hold whole lines: each ends with its newline but perhaps the file's last.
            const lines = r.data.split('\n');
            if (r.data.endsWith('\n')) lines.pop();
            for (const text of lines) {
              lineNo++;
              if (text.trim() === '') continue;
              requests++;
              yield { line: lineNo, text };
            }
          }
          after = (rows[rows.length - 1] as { seq: number }).seq;
        }
      })(),
    };
  }

  /**
   * OpenAI's file list: uploaded files (batch and model input files) and batch output/error files of the caller's workspace,
   * newest first (or `asc`), `limit` at a time after the `after` file.
   */
  async list(
    caller: Caller,
    q: { after?: string; limit?: number; order?: 'asc' | 'desc'; purpose?: string },
  ): Promise<{
    object: 'list';
    data: FileObject[];
    has_more: boolean;
    first_id: string | null;
    last_id: string | null;
  }> {
    const owner = this.owner(caller);
    const { db, dialect } = this.deps;
    const order = q.order ?? 'desc';
    const limit = q.limit ?? 10000;
    const purpose = q.purpose ?? null;
    const now = Math.floor(Date.now() / 1000);
    let cursor: files.Cursor | null = null;
    if (q.after) {
      const after = await this.get(caller, q.after).catch(() => null);
      if (!after) throw badRequest(`after: no file ${q.after}`);
      cursor = { createdAt: after.created_at, id: after.id, order };
    }
    const dir = order === 'desc' ? -1 : 1;
    const cmp = (a: { created_at: number; id: string }, b: { created_at: number; id: string }) =>
      dir * (a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    // Each source reads one page past the cursor (keyset on (created_at, id)); the two are merged
    // here. No derived file's size is read until it is on the page.
    type Entry = { created_at: number; id: string; view: () => Promise<FileObject> };
    const entries: Entry[] = [];
    // Uploaded files: every purpose (batch and model inputs) unless one is asked for.
    if (purpose !== 'batch_output') {
      for (const row of await files.listFiles(db, dialect, owner, {
        cursor,
        order,
        limit: limit + 1,
        purpose,
        now,
      }))
        entries.push({ created_at: Number(row.created_at), id: row.id, view: async () => uploadedView(row) });
    }
    if (purpose === null || purpose === 'batch_output') {
      // limit + 2: the cursor's own batch may come first, with none of its files past the cursor.
      for (const b of await files.finalBatches(db, dialect, owner, {
        cursor,
        order,
        limit: limit + 2,
        now,
      })) {
        const at = Number(b.finalized_at);
        if (b.completed_count > 0)
          entries.push({ created_at: at, id: outputFileId(b.id), view: () => this.derivedView(b, 'output') });
        if (b.failed_count > 0)
          entries.push({ created_at: at, id: errorFileId(b.id), view: () => this.derivedView(b, 'error') });
      }
    }
    const after = cursor ? { created_at: cursor.createdAt, id: cursor.id } : null;
    const page = entries.filter((e) => after === null || cmp(e, after) > 0).sort(cmp);
    const data = await Promise.all(page.slice(0, limit).map((e) => e.view()));
    return {
      object: 'list',
      data,
      has_more: page.length > limit,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
    };
  }

  private async derivedView(batch: store.BatchRow, kind: 'output' | 'error'): Promise<FileObject> {
    const id = kind === 'output' ? outputFileId(batch.id) : errorFileId(batch.id);
    let bytes = this.derivedBytes.get(id);
    if (bytes === undefined) {
      bytes = 0;
      for await (const text of resultLines(this.deps.db, batch.id, kind)) bytes += Buffer.byteLength(text);
      if (this.derivedBytes.size >= 10_000) this.derivedBytes.clear();
      this.derivedBytes.set(id, bytes);
    }
    return {
      id,
      object: 'file',
      bytes,
      created_at: Number(batch.finalized_at),
      filename: `${batch.id}_${kind}.jsonl`,
      purpose: 'batch_output',
      status: 'processed',
      expires_at: derivedExpiresAt(batch),
      status_details: null,
    };
  }
}

/** An uploaded file's File object (a batch file's, or a model input file's). */
export function uploadedView(row: files.FileRow): FileObject {
  return {
    id: row.id,
    object: 'file',
    bytes: Number(row.bytes),
    created_at: Number(row.created_at),
    filename: row.filename,
    purpose: row.purpose as FileObject['purpose'],
    status: 'processed',
    expires_at: row.expires_at === null ? null : Number(row.expires_at),
    status_details: null,
  };
}
