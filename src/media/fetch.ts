/**
 * Image URLs given in a request (`image_input`, `reference_images`, `image`) fetched to a temp file:
 * http(s) only, the host resolved first and every address judged (loopback, private, link-local
 * and other internal ranges refused unless GATEHOUSE_MEDIA_FETCH_PRIVATE=on), the connection made to
 * exactly the address judged, no redirects, a deadline, the size limit enforced while streaming and
 * the bytes sniffed to be an image.
 */

import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { isPrivateAddress } from '../lib/addresses.js';
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
  const host = target.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');

  let addresses: { address: string; family: number }[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (err) {
      throw failed(
        field,
        `Could not resolve ${host}: ${(err as NodeJS.ErrnoException).code ?? 'lookup failed'}`,
      );
    }
  }
  const pinned = addresses[0];
  if (!pinned) throw failed(field, `Could not resolve ${host}`);
  if (!opts.allowPrivate) {
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad)
      throw new MediaError(
        400,
        'url_not_allowed',
        `${field}: ${host} is a loopback, private or link-local address, which image URLs may not point at`,
        field,
      );
  }
  const pin: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) callback(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const dispatcher = new Agent({
    connect: { lookup: pin },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
  });
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
