/**
 * Image URLs given in a request (`image_input`, `reference_images`, `image`) fetched to a temp file:
 * http(s) only, through the address guard (address-guard.ts: internal addresses refused, the
 * connection pinned to the address judged), no redirects, a deadline, the size limit enforced while streaming and
 * the bytes sniffed to be an image.
 */

import { request } from 'undici';
import { AddressRefused, hostOf, pinnedAgent, type Resolved, resolveAllowed } from '../lib/address-guard.js';
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

/** Fetches one image URL to `dest` (see the module comment); errors are MediaErrors naming `field`. */
export async function fetchImage(url: string, opts: FetchOptions): Promise<InputImage> {
  const { field } = opts;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new MediaError(400, 'invalid_value', `${field} holds an invalid URL`, field);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new MediaError(400, 'invalid_value', `${field} must hold http(s) URLs`, field);
  const host = hostOf(target);

  let pinned: Resolved;
  try {
    pinned = await resolveAllowed(host, opts.allowPrivate);
  } catch (err) {
    if (!(err instanceof AddressRefused)) throw err;
    if (err.reason === 'unresolved') throw failed(field, err.message);
    throw new MediaError(
      400,
      'url_not_allowed',
      `${field}: ${host} is a loopback, private or link-local address, which image URLs may not point at`,
      field,
    );
  }
  const dispatcher = pinnedAgent(pinned, { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  try {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(target, {
        method: 'GET',
        headers: { accept: 'image/png, image/jpeg, image/webp, image/gif' },
        dispatcher,
        signal,
      });
    } catch (err) {
      const why = deadline.aborted ? 'timed out' : ((err as NodeJS.ErrnoException).code ?? 'request failed');
      throw failed(field, `Fetching ${field} from ${host} failed: ${why}`);
    }
    // Bodies are destroyed on refusal below; their abort error has nobody else to go to.
    res.body.on('error', () => {});
    if (res.statusCode !== 200) {
      res.body.destroy();
      throw failed(field, `Fetching ${field} from ${host} answered ${res.statusCode}`);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > opts.maxBytes) {
      res.body.destroy();
      throw new MediaError(
        400,
        'file_too_large',
        `${field} is larger than the limit of ${opts.maxBytes} bytes`,
        field,
      );
    }
    try {
      return await saveImageStream(res.body, opts.dest, field, opts.maxBytes, { stopAtLimit: true });
    } catch (err) {
      if (err instanceof MediaError) throw err;
      throw failed(
        field,
        `Fetching ${field} from ${host} failed: ${deadline.aborted ? 'timed out' : 'read error'}`,
      );
    }
  } finally {
    dispatcher.close().catch(() => {});
  }
}
