import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { ApiError, badRequest } from '../lib/errors.js';
import type { TempFiles } from '../lib/temp-files.js';
import type { Upload } from './input-files.js';

/** An upload form read whole: its text fields, and its one file on local disk. */
export interface UploadForm {
  fields: Record<string, string>;
  file: Upload | null;
}

const HEAD_BYTES = 16;

/**
 * Reads a Files API upload (`multipart/form-data`: `file`, and OpenAI's `purpose` and
 * `expires_after[…]`): the file goes to a temp file as it arrives, at most `maxBytes` (413 beyond),
 * since the purpose that decides what it is may come after it. A second file, or a file under
 * another name, is a 400 once the body has been read.
 */
export async function readUploadForm(
  req: FastifyRequest,
  temp: TempFiles,
  maxBytes: number,
  tooLarge: (max: number) => ApiError,
): Promise<UploadForm> {
  const fields: Record<string, string> = {};
  let file: Upload | null = null;
  let failure: unknown = null;
  const limits = { fieldSize: 4096, fields: 20, parts: 30, fileSize: maxBytes + 1 };
  try {
    for await (const part of req.parts({ limits })) {
      if (part.type === 'field') {
        fields[part.fieldname] = String(part.value);
        continue;
      }
      if (failure || part.fieldname !== 'file' || file) {
        failure ??= badRequest(
          part.fieldname === 'file' ? 'Send one file per upload' : `Unknown file field ${part.fieldname}`,
        );
        await Readable.from(part.file).forEach(() => {});
        continue;
      }
      const path = await temp.path();
      let bytes = 0;
      let head = Buffer.alloc(0);
      part.file.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (head.length < HEAD_BYTES)
          head = Buffer.concat([head, chunk.subarray(0, HEAD_BYTES - head.length)]);
      });
      await pipeline(part.file, createWriteStream(path));
      // Busboy stops a file one byte past the limit and marks it truncated.
      if (part.file.truncated || bytes > maxBytes) {
        failure ??= tooLarge(maxBytes);
        continue;
      }
      file = { path, filename: part.filename, declaredType: part.mimetype, bytes, head };
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw badRequest(`The multipart body is malformed: ${(err as Error).message}`);
  }
  if (failure) throw failure;
  return { fields, file };
}
