import { type ChatRequest, type ContentPart, TranslationError } from '../formats/chat.js';
import { AddressRefused, type GuardedAnswer, GuardedGetFailed, guardedGet } from '../lib/address-guard.js';
import type { CallSignal } from '../lib/call-abort.js';
import { redactUrl } from '../lib/redact-url.js';
import { isHttpUrl } from './content.js';

/**
 * Images and documents given by URL, fetched by Gatehouse for the providers that take none (Gemini,
 * Bedrock's Converse) and sent inline. A caller's URL fetched from inside the network goes through
 * the address guard every such request does (lib/address-guard.ts: internal addresses refused
 * unless the operator allows them, the connection pinned to the address judged, no redirects);
 * the body is capped in size and time.
 */

/** `public` (default): public addresses only; `any`: private networks too (a trusted network); `off`: no fetching. */
export type RemoteMediaMode = 'public' | 'any' | 'off';

export interface RemoteMediaOptions {
  mode: RemoteMediaMode;
  maxBytes?: number;
  timeoutMs?: number;
}

export interface Fetched {
  mediaType: string;
  /** base64 */
  data: string;
}

export interface RemoteMedia {
  /** The largest body fetched, and the most all the URLs of one call may add up to. */
  readonly maxBytes: number;
  /** The body at `url` (an http(s) URL, at most `maxBytes`), or a TranslationError saying why not. */
  fetch(url: string, signal: CallSignal, maxBytes?: number): Promise<Fetched>;
}

/** The most URLs fetched for one call, and how many at once. */
const MAX_URLS = 16;
const PARALLEL = 4;

export function createRemoteMedia(opts: RemoteMediaOptions): RemoteMedia {
  const maxBytes = opts.maxBytes ?? 20 * 1024 * 1024;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  // The URL as it may be shown and logged: no user info, no credential-looking query values.
  const fail = (url: string, why: string): never => {
    const shown = redactUrl(url).replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
    throw new TranslationError(`could not fetch ${shown} for a provider that takes no URLs: ${why}`);
  };

  async function get(
    url: string,
    signal: AbortSignal,
    timedOut: () => boolean,
    maxBytes: number,
  ): Promise<Fetched> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return fail(url, 'not a valid URL');
    }
    if (!isHttpUrl(target.href)) return fail(url, 'only http(s) URLs are fetched');
    const why = (err: unknown) =>
      timedOut()
        ? `no answer within ${timeoutMs} ms`
        : ((err as NodeJS.ErrnoException).code ?? 'the request failed');
    let answer: GuardedAnswer;
    try {
      answer = await guardedGet(target, {
        allowPrivate: opts.mode === 'any',
        timeoutMs,
        maxBytes,
        accept: 'image/*, application/pdf, text/*',
        signal,
      });
    } catch (err) {
      if (err instanceof AddressRefused) return fail(url, err.message);
      if (!(err instanceof GuardedGetFailed)) throw err;
      if (err.reason === 'status') return fail(url, `the server answered ${err.status}`);
      return fail(url, err.reason === 'request' ? why(err.cause) : err.message);
    }
    try {
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of answer.body) {
          size += (chunk as Buffer).length;
          if (size > maxBytes) {
            answer.body.destroy();
            return fail(url, `larger than ${maxBytes} bytes`);
          }
          chunks.push(chunk as Buffer);
        }
      } catch (err) {
        if (err instanceof TranslationError) throw err;
        return fail(url, why(err));
      }
      const mediaType =
        String(answer.headers['content-type'] ?? '')
          .split(';')[0]
          ?.trim()
          .toLowerCase() ?? '';
      if (!mediaType) return fail(url, 'the server named no content type');
      return { mediaType, data: Buffer.concat(chunks).toString('base64') };
    } finally {
      answer.close();
    }
  }

  return {
    maxBytes,
    async fetch(url, signal, limit = maxBytes) {
      if (opts.mode === 'off')
        fail(url, 'fetching URLs is off on this gateway (GATEHOUSE_REMOTE_MEDIA=off); send the data inline');
      // The call's cancellation and this fetch's own deadline, as one signal for undici.
      const controller = new AbortController();
      const onAbort = () => controller.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new Error('timed out'));
      }, timeoutMs);
      try {
        return await get(url, controller.signal, () => timedOut, Math.min(limit, maxBytes));
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      }
    },
  };
}

/**
 * The request with every http(s) image and document URL replaced by its data (each URL fetched
 * once, all at once); the request itself when it has none. `media` absent: such a URL is refused.
 */
export async function inlineRemoteMedia(
  req: ChatRequest,
  media: RemoteMedia | undefined,
  signal: CallSignal,
): Promise<ChatRequest> {
  const urlOf = (p: ContentPart): string | null => {
    const url = p.type === 'image_url' ? p.image_url.url : p.type === 'file' ? p.file.file_data : undefined;
    return url && isHttpUrl(url) ? url : null;
  };
  const urls = new Set<string>();
  for (const m of req.messages)
    if (Array.isArray(m.content))
      for (const p of m.content) {
        const url = urlOf(p);
        if (url) urls.add(url);
      }
  if (urls.size === 0) return req;
  if (!media)
    throw new TranslationError('this provider takes images and documents inline only: send a data: URL');
  if (urls.size > MAX_URLS)
    throw new TranslationError(
      `at most ${MAX_URLS} image and document URLs are fetched for one call (this one has ${urls.size}): send the others as data: URLs`,
    );
  // A few at a time, all of them within one budget: what the provider takes inline in one request.
  const fetched = new Map<string, Fetched>();
  const queue = [...urls];
  let left = media.maxBytes;
  const worker = async () => {
    for (let url = queue.shift(); url !== undefined; url = queue.shift()) {
      const got = await media.fetch(url, signal, left);
      left -= Math.floor((got.data.length * 3) / 4);
      if (left < 0)
        throw new TranslationError(
          `the images and documents of this call add up to more than ${media.maxBytes} bytes`,
        );
      fetched.set(url, got);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, worker));
  const inline = (p: ContentPart): ContentPart => {
    const url = urlOf(p);
    const got = url ? fetched.get(url) : undefined;
    if (!got) return p;
    const dataUrl = `data:${got.mediaType};base64,${got.data}`;
    if (p.type === 'image_url') {
      if (!got.mediaType.startsWith('image/'))
        throw new TranslationError(`image_url ${url}: the server sent ${got.mediaType}, not an image`);
      return { ...p, image_url: { ...p.image_url, url: dataUrl } };
    }
    if (p.type === 'file') return { ...p, file: { ...p.file, file_data: dataUrl } };
    return p;
  };
  return {
    ...req,
    messages: req.messages.map((m) =>
      Array.isArray(m.content) ? { ...m, content: m.content.map(inline) } : m,
    ),
  };
}
