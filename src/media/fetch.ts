/**
 * Image URLs given in a request (`image_input`, `reference_images`, `image`) written to a temp file.
 * A `data:` URL (base64, what SDKs send for a local file) is decoded; an http(s) URL is fetched through the address guard (address-guard.ts: internal addresses refused, the
 * connection pinned to the address judged), no redirects, a deadline, the size limit enforced while streaming and
 * the bytes sniffed to be an image.
 */

import {
  AddressRefused,
  type GuardedAnswer,
  GuardedGetFailed,
  guardedGet,
  hostOf,
} from '../lib/address-guard.js';
import type { TempFiles } from '../lib/temp-files.js';
import type { MediaConfig } from './config.js';
import { type InputImage, MediaError } from './types.js';
import { saveImageStream } from './uploads.js';

export interface FetchOptions {
  dest: string;
  field: string;
  maxBytes: number;
  allowPrivate: boolean;
  timeoutMs: number;
  signal?: AbortSignal;
}

const failed = (field: string, message: string) => new MediaError(400, 'image_fetch_failed', message, field);

/** Fetches a request's image URLs, each to a temp file, at once; the first failure is thrown. */
export async function fetchImages(
  urls: { param: string; url: string }[],
  temp: TempFiles,
  config: Pick<MediaConfig, 'maxUploadBytes' | 'fetchPrivate' | 'fetchTimeoutMs'>,
  signal: AbortSignal,
): Promise<InputImage[]> {
  const fetched = await Promise.allSettled(
    urls.map(async ({ param, url }) =>
      fetchImage(url, {
        dest: await temp.path(),
        field: param,
        maxBytes: config.maxUploadBytes,
        allowPrivate: config.fetchPrivate,
        timeoutMs: config.fetchTimeoutMs,
        signal,
      }),
    ),
  );
  const failure = fetched.find((r) => r.status === 'rejected');
  if (failure) throw failure.reason;
  return fetched.map((r) => (r as PromiseFulfilledResult<InputImage>).value);
}

/** Fetches one image URL to `dest` (see the module comment); errors are MediaErrors naming `field`. */
export async function fetchImage(url: string, opts: FetchOptions): Promise<InputImage> {
  const { field } = opts;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new MediaError(400, 'invalid_value', `${field} holds an invalid URL`, field);
  }
  if (target.protocol === 'data:') return saveDataUrl(url, opts);
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new MediaError(400, 'invalid_value', `${field} must hold http(s) or data: URLs`, field);
  const host = hostOf(target);

  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  let answer: GuardedAnswer;
  try {
    answer = await guardedGet(target, {
      allowPrivate: opts.allowPrivate,
      timeoutMs: opts.timeoutMs,
      maxBytes: opts.maxBytes,
      accept: 'image/png, image/jpeg, image/webp, image/gif',
      signal,
    });
  } catch (err) {
    if (err instanceof AddressRefused) {
      if (err.reason === 'unresolved') throw failed(field, err.message);
      throw new MediaError(
        400,
        'url_not_allowed',
        `${field}: ${host} is a loopback, private or link-local address, which image URLs may not point at`,
        field,
      );
    }
    if (!(err instanceof GuardedGetFailed)) throw err;
    if (err.reason === 'too_large')
      throw new MediaError(
        400,
        'file_too_large',
        `${field} is larger than the limit of ${opts.maxBytes} bytes`,
        field,
      );
    if (err.reason === 'status') throw failed(field, `Fetching ${field} from ${host} answered ${err.status}`);
    throw failed(
      field,
      `Fetching ${field} from ${host} failed: ${deadline.aborted ? 'timed out' : err.message}`,
    );
  }
  try {
    return await saveImageStream(answer.body, opts.dest, field, opts.maxBytes, { stopAtLimit: true });
  } catch (err) {
    if (err instanceof MediaError) throw err;
    throw failed(
      field,
      `Fetching ${field} from ${host} failed: ${deadline.aborted ? 'timed out' : 'read error'}`,
    );
  } finally {
    answer.close();
  }
}

/** A base64 `data:` URL's bytes, decoded to `dest` under the same size limit and type sniffing. */
async function saveDataUrl(url: string, opts: FetchOptions): Promise<InputImage> {
  const { field } = opts;
  const comma = url.indexOf(',');
  if (comma < 0 || !/;base64$/i.test(url.slice(0, comma)))
    throw new MediaError(400, 'invalid_value', `${field}: a data: URL must be base64-encoded`, field);
  // Base64 is 4 characters per 3 bytes: a payload this long cannot fit the limit, so it is not decoded.
  if ((url.length - comma - 1) * 0.75 > opts.maxBytes + 3)
    throw new MediaError(
      400,
      'file_too_large',
      `${field} is larger than the limit of ${opts.maxBytes} bytes`,
      field,
    );
  const bytes = Buffer.from(url.slice(comma + 1), 'base64');
  return saveImageStream([bytes], opts.dest, field, opts.maxBytes, { stopAtLimit: true });
}
