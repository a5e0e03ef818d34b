import { createReadStream } from 'node:fs';
import { lookup } from 'mime-types';
import type { Caller } from '../accounts/caller.js';
import { type FileObject, uploadedView } from '../batches/openai-files.js';
import * as files from '../batches/openai-files-store.js';
import type { Db, Dialect } from '../db/connection.js';
import { badRequest } from '../lib/errors.js';
import { isPdf, sniffImage } from '../lib/sniff.js';
import type { InlineFile } from './references.js';

/**
 * Files for model inputs: uploaded once (OpenAI's `files.create` with purpose `user_data`,
 * `assistants` or `vision`; Anthropic's and OpenRouter's files, which have no purpose) and named by
 * id in later calls, whichever provider serves them (references.ts puts their content in the call).
 * They live beside batch input files (one table, one id space, one list): the content as base64.
 */

/** OpenAI's purposes of files a model reads; a file uploaded without one takes `user_data`. */
export const INPUT_PURPOSES = ['user_data', 'assistants', 'vision'] as const;
export type InputPurpose = (typeof INPUT_PURPOSES)[number];
export const isInputPurpose = (p: unknown): p is InputPurpose =>
  typeof p === 'string' && (INPUT_PURPOSES as readonly string[]).includes(p);

/** Bytes per stored chunk: whole 3-byte groups, so each chunk's base64 joins the next's without padding. */
const CHUNK_BYTES = 3 * 256 * 1024;

/** An upload on local disk (the form was streamed to a temporary file), with what the client said of it. */
export interface Upload {
  path: string;
  filename: string;
  /** The part's declared type; the file's bytes and name decide when it is vague. */
  declaredType: string | undefined;
  bytes: number;
  head: Buffer;
}

/**
 * The file's media type: what its bytes say for PDFs and images, else the declared type unless it
 * is the generic `application/octet-stream`, else what its name's extension says.
 */
export function mediaTypeOf(upload: Pick<Upload, 'filename' | 'declaredType' | 'head'>): string {
  if (isPdf(upload.head)) return 'application/pdf';
  const image = sniffImage(upload.head);
  if (image) return image.contentType;
  const declared = upload.declaredType?.split(';')[0]?.trim().toLowerCase();
  if (declared && declared !== 'application/octet-stream') return declared;
  return lookup(upload.filename) || 'application/octet-stream';
}

export class InputFiles {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {}

  /**
   * Anthropic's list of the workspace's model input files, newest first: `limit` after the
   * `afterId` file (older), or the `limit` just before the `beforeId` one (newer).
   */
  async list(
    owner: Pick<Caller, 'organizationId' | 'workspaceId'>,
    q: { afterId?: string; beforeId?: string; limit: number },
  ): Promise<{ rows: { view: FileObject; mimeType: string | null }[]; hasMore: boolean }> {
    const now = Math.floor(Date.now() / 1000);
    const ref = q.afterId ?? q.beforeId;
    let cursor: files.Cursor | null = null;
    const order = q.beforeId !== undefined && q.afterId === undefined ? 'asc' : 'desc';
    if (ref !== undefined) {
      const at = await files.getFile(this.db, owner, ref, now);
      if (!at) throw badRequest(`${q.afterId !== undefined ? 'after_id' : 'before_id'}: no file ${ref}`);
      cursor = { createdAt: Number(at.created_at), id: at.id, order };
    }
    const rows = await files.listFiles(this.db, this.dialect, owner, {
      cursor,
      order,
      limit: q.limit + 1,
      purpose: INPUT_PURPOSES,
      now,
    });
    const page = rows.slice(0, q.limit);
    if (order === 'asc') page.reverse();
    return {
      rows: page.map((r) => ({ view: uploadedView(r), mimeType: r.mime_type })),
      hasMore: rows.length > q.limit,
    };
  }

  /** Stores an upload of the caller's workspace (hidden until whole) and shows it; its row. */
  async store(
    owner: Pick<Caller, 'organizationId' | 'workspaceId'>,
    upload: Upload,
    purpose: InputPurpose,
    expiresAt: number | null,
  ): Promise<files.FileRow> {
    const id = files.newFileId();
    const now = Math.floor(Date.now() / 1000);
    const row = {
      id,
      organization_id: owner.organizationId,
      workspace_id: owner.workspaceId,
      filename: upload.filename || 'upload',
      purpose,
      created_at: now,
      expires_at: expiresAt,
    };
    await files.createFile(this.db, row);
    try {
      let seq = 0;
      for await (const chunk of createReadStream(upload.path, { highWaterMark: CHUNK_BYTES })) {
        await files.appendChunk(this.db, id, seq++, (chunk as Buffer).toString('base64'));
      }
      const mimeType = mediaTypeOf(upload);
      await files.completeFile(this.db, id, {
        bytes: upload.bytes,
        line_count: 0,
        purpose,
        expires_at: expiresAt,
        mime_type: mimeType,
      });
      return { ...row, bytes: upload.bytes, line_count: 0, complete: 1, mime_type: mimeType };
    } catch (err) {
      await files.deleteFile(this.db, id).catch(() => {});
      throw err;
    }
  }

  /** The content of a model input file of the owner's workspace; null when it has none by that id. */
  async inline(
    owner: Pick<Caller, 'organizationId' | 'workspaceId'>,
    id: string,
  ): Promise<InlineFile | null> {
    const row = await files.getFile(this.db, owner, id, Math.floor(Date.now() / 1000));
    if (!row || !isInputPurpose(row.purpose)) return null;
    let base64 = '';
    for await (const part of files.chunkData(this.db, id)) base64 += part;
    return { id, filename: row.filename, mimeType: row.mime_type ?? 'application/octet-stream', base64 };
  }
}
