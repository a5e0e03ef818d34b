/**
 * Input images on their way to local disk: multipart file parts streamed to a per-request temp
 * directory (never buffered whole; the size limit enforced while streaming), their type sniffed
 * from magic bytes, and the directory removed when the request ends.
 */

import { createWriteStream, type WriteStream } from 'node:fs';
import type { FastifyRequest } from 'fastify';
import { sniffImage } from '../lib/sniff.js';
import type { TempFiles } from '../lib/temp-files.js';
import { type InputImage, MediaError, type MediaRoute } from './types.js';

const tooLarge = (field: string, max: number) =>
  new MediaError(400, 'file_too_large', `${field} is larger than the limit of ${max} bytes`, field);
const notAnImage = (field: string) =>
  new MediaError(400, 'invalid_image', `${field} is not a PNG, JPEG, WebP or GIF image`, field);

function write(out: WriteStream, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (out.write(chunk)) return resolve();
    const onDrain = () => {
      out.off('error', onError);
      resolve();
    };
    const onError = (err: Error) => {
      out.off('drain', onDrain);
      reject(err);
    };
    out.once('drain', onDrain);
    out.once('error', onError);
  });
}

function finish(out: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    out.once('error', reject);
    out.end(() => resolve());
  });
}

/**
 * Streams `source` to `dest`, at most `maxBytes` (more → file_too_large; what is beyond is read and
 * dropped, so the request stays readable), and checks that it is an image (else invalid_image).
 */
export async function saveImageStream(
  source: AsyncIterable<Buffer | Uint8Array> | Iterable<Buffer | Uint8Array>,
  dest: string,
  field: string,
  maxBytes: number,
  /** Stop reading at the limit (a fetched body) instead of reading on and dropping (a multipart part). */
  opts: { stopAtLimit?: boolean } = {},
): Promise<InputImage> {
  const out = createWriteStream(dest, { mode: 0o600 });
  let bytes = 0;
  let head = Buffer.alloc(0);
  let over = false;
  try {
    for await (const piece of source) {
      const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(piece);
      bytes += chunk.length;
      if (over) continue;
      if (bytes > maxBytes) {
        over = true;
        if (opts.stopAtLimit) break;
        continue;
      }
      if (head.length < 16) head = Buffer.concat([head, chunk.subarray(0, 16 - head.length)]);
      await write(out, chunk);
    }
  } finally {
    await finish(out).catch(() => {});
  }
  if (over) throw tooLarge(field, maxBytes);
  const type = sniffImage(head);
  if (!type) throw notAnImage(field);
  return { path: dest, contentType: type.contentType, bytes, param: field };
}

const malformed = (err: Error) =>
  new MediaError(400, 'invalid_body', `The multipart body is malformed: ${err.message}`);

/** What a multipart body holds: its text fields (repeated fields as lists) and its saved images. */
export interface MultipartBody {
  fields: Record<string, string | string[]>;
  files: InputImage[];
}

/**
 * Which parameter a file part fills, given the files saved so far: its name, or the error that
 * refuses it (the part is then read and dropped).
 */
export type FilePolicy = (field: string, saved: readonly InputImage[]) => string | MediaError;

/**
 * Reads a multipart body part by part: text fields (repeated ones as lists), and file parts as
 * `accept` allows, each image's bytes going to a temp file as they arrive. A refused file part or an
 * image that fails its checks is a 400 naming the field, raised after the rest of the body has been
 * read (and dropped), so the client always gets the answer.
 */
export async function readImageForm(
  req: FastifyRequest,
  temp: TempFiles,
  limits: { maxUploadBytes: number; fieldBytes: number },
  accept: FilePolicy,
): Promise<MultipartBody> {
  const fields: Record<string, string | string[]> = Object.create(null);
  const files: InputImage[] = [];
  let failure: unknown = null;
  const parts = req.parts({
    // Busboy stops a file one byte past the limit (the plugin is registered with throwFileSizeLimit off).
    limits: { fileSize: limits.maxUploadBytes + 1, fieldSize: limits.fieldBytes, fields: 200, parts: 250 },
  });
  try {
    for await (const part of parts) {
      if (part.type === 'field') {
        const value = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
        if (part.valueTruncated && !failure)
          failure = new MediaError(400, 'invalid_value', `${part.fieldname} is too long`, part.fieldname);
        const prev = fields[part.fieldname];
        fields[part.fieldname] =
          prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
        continue;
      }
      const drain = async () => {
        for await (const _ of part.file) {
          // dropped
        }
      };
      const param = failure ? null : accept(part.fieldname, files);
      if (param === null || param instanceof MediaError) {
        failure ??= param;
        await drain();
        continue;
      }
      // The part's own stream failing (the body ended inside it) is the client's error; failing
      // to write the temp file is not.
      let partError: Error | null = null;
      part.file.once('error', (err: Error) => {
        partError = err;
      });
      try {
        files.push(await saveImageStream(part.file, await temp.path(), param, limits.maxUploadBytes));
      } catch (err) {
        failure = partError ? malformed(partError) : err;
        await drain();
      }
    }
  } catch (err) {
    // Reading the body itself failed: busboy's plain Errors (no boundary, malformed part headers)
    // are the client's; the plugin's limit errors carry their own status.
    if (err instanceof MediaError || (err as { statusCode?: number }).statusCode) throw err;
    throw malformed(err as Error);
  }
  if (failure) throw failure;
  return { fields: { ...fields }, files };
}

/**
 * A media route's form: the only file part allowed is one named like an `image` parameter of the
 * route, once.
 */
export function readMultipart(
  req: FastifyRequest,
  route: MediaRoute,
  temp: TempFiles,
  limits: { maxUploadBytes: number; fieldBytes: number },
): Promise<MultipartBody> {
  return readImageForm(req, temp, limits, (name, saved) => {
    const spec = route.params[name];
    if (!spec)
      return new MediaError(
        400,
        'unknown_parameter',
        `${route.kind}/${route.name} does not take the parameter ${name}`,
        name,
      );
    if (spec.type !== 'image')
      return new MediaError(400, 'invalid_type', `${name} cannot be sent as a file`, name);
    if (saved.some((f) => f.param === name))
      return new MediaError(400, 'invalid_value', `${name} may be sent only once`, name);
    return name;
  });
}
