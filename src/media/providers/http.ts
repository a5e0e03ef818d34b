/**
 * HTTP for the media provider adapters (the media domain does not import the gateway's
 * providers/): one request per attempt under the provider's `timeout_ms`, retries with backoff on
 * 429/408/5xx and connection errors (Retry-After / retry-after-ms honoured, capped), response
 * bodies read under a size cap, outputs fetched and sniffed, and every failure mapped to a
 * MediaError:
 *
 * - the provider answered ≥ 400 (after the last attempt) → 502 `provider_error`
 *   `Provider "<slug>" answered HTTP <status> to <operation>: <its message>`;
 * - it could not be reached (after the last attempt) → 502 `provider_error` naming the cause;
 * - an attempt ran past `timeout_ms` → 504 `generation_timeout` (not retried: the work may be
 *   running and would be paid twice);
 * - not JSON, too large, no output, bad base64, an output that is neither an image nor a video
 *   (sniffed from its bytes) → 502 `invalid_provider_response`;
 * - the caller's signal aborted (the service's deadline, or the client went away) → its reason,
 *   rethrown as is.
 *
 * Every message is scrubbed of the API key and the configured header values before it is built.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Dispatcher, request } from 'undici';
import { AddressRefused, hostOf, pinnedAgent, resolveAllowed } from '../../lib/address-guard.js';
import { sniffImage } from '../../lib/sniff.js';
import { MediaError, type MediaKind } from '../types.js';
import type { MediaProviderConfig } from './config.js';

/** Longest wait a Retry-After may impose between two attempts. */
export const MAX_RETRY_AFTER_MS = 20_000;
/** First backoff (doubled per attempt, ±20 % jitter) when the provider gives no Retry-After. */
export const BASE_BACKOFF_MS = 300;
/** Largest JSON answer read, besides the output cap (base64 images inflate by 4/3). */
const JSON_SLACK_BYTES = 1024 * 1024;

/** A MediaError that may be worth another attempt. */
export class ProviderError extends MediaError {
  constructor(
    status: number,
    code: string,
    message: string,
    readonly retryable = false,
    readonly retryAfterMs?: number,
  ) {
    super(status, code, message);
  }
}

export function redact(text: string, secrets: readonly (string | null | undefined)[]): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

/** Milliseconds from `retry-after-ms`, or `retry-after` (seconds or an HTTP date). */
export function parseRetryAfter(headers: IncomingHttpHeaders, now = Date.now()): number | undefined {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim();
  const ms = one(headers['retry-after-ms']);
  if (ms && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.round(Number(ms));
  const ra = one(headers['retry-after']);
  if (!ra) return undefined;
  if (/^\d+(\.\d+)?$/.test(ra)) return Math.round(Number(ra) * 1000);
  const at = Date.parse(ra);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The provider's own message from an error body (OpenAI `{error:{message}}`, `{message}`, `{detail}`, text). */
export function providerMessage(text: string): string {
  try {
    const b = JSON.parse(text) as Record<string, unknown> | null;
    if (b && typeof b === 'object') {
      const e = b.error;
      if (typeof e === 'string' && e) return e;
      if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string')
        return (e as { message: string }).message;
      if (typeof b.message === 'string' && b.message) return b.message;
      if (typeof b.detail === 'string' && b.detail) return b.detail;
    }
  } catch {}
  return text.trim().replace(/\s+/g, ' ').slice(0, 300);
}

const TRANSPORT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'answer cut off',
  UND_ERR_CLOSED: 'connection closed',
};

function transportCause(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown }; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : '';
  return TRANSPORT[code] ?? (code || (typeof e?.message === 'string' ? e.message : 'request failed'));
}

function abortReason(signal: AbortSignal): unknown {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new DOMException('The operation was aborted', 'AbortError');
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  data: Buffer;
}

export interface SendOptions {
  method: 'GET' | 'POST';
  url: string;
  /** What is being done, for messages ("images/generations", "task submit"). */
  operation: string;
  /** Built per attempt (a multipart body is consumed by each attempt). */
  body?: () => { body: Dispatcher.DispatchOptions['body']; contentType?: string };
  /** Largest answer read (default: the output cap plus slack). */
  maxBytes?: number;
  /** Send the configured Authorization/headers (off for output URLs on another origin). */
  auth?: boolean;
  /** Attempts (default: the provider's max_attempts). */
  attempts?: number;
  /** Extra request headers, the same on every attempt (e.g. an Idempotency-Key). */
  headers?: Record<string, string>;
  /** Where connections go (output URLs on another origin: pinned to the address judged). */
  dispatcher?: Dispatcher;
}

export interface ProviderHttpOptions {
  /** Output URLs on another origin may point at internal addresses (GATEHOUSE_MEDIA_FETCH_PRIVATE=on). */
  fetchPrivate?: boolean;
}

/** One provider's HTTP: auth, attempts, timeouts, error mapping. */
export class ProviderHttp {
  readonly secrets: string[];

  constructor(
    readonly config: MediaProviderConfig,
    private readonly options: ProviderHttpOptions = {},
  ) {
    this.secrets = [config.apiKey ?? '', ...Object.values(config.headers)].filter((s) => s.length >= 4);
  }

  get name(): string {
    return `Provider "${this.config.slug}"`;
  }

  url(path: string): string {
    return `${this.config.baseUrl}/${path.replace(/^\/+/, '')}`;
  }

  invalid(message: string): ProviderError {
    return new ProviderError(
      502,
      'invalid_provider_response',
      redact(`${this.name} ${message}`, this.secrets),
    );
  }

  /** Sends with retries; resolves with a < 400 answer (body read whole under the cap). */
  async send(opts: SendOptions, signal: AbortSignal): Promise<Answer> {
    const attempts = opts.attempts ?? this.config.maxAttempts;
    for (let n = 1; ; n++) {
      if (signal.aborted) throw abortReason(signal);
      try {
        return await this.attempt(opts, signal);
      } catch (err) {
        if (signal.aborted) throw abortReason(signal);
        if (!(err instanceof ProviderError) || !err.retryable || n >= attempts) {
          if (err instanceof ProviderError && err.retryable && attempts > 1)
            throw new ProviderError(err.status, err.code, `${err.message} (after ${n} attempts)`);
          throw err;
        }
        const backoff = BASE_BACKOFF_MS * 2 ** (n - 1) * (0.8 + Math.random() * 0.4);
        const wait = Math.min(err.retryAfterMs ?? backoff, MAX_RETRY_AFTER_MS);
        try {
          await sleep(wait, undefined, { signal });
        } catch {
          throw abortReason(signal);
        }
      }
    }
  }

  /** Sends and parses a JSON answer. */
  async json(opts: SendOptions, signal: AbortSignal): Promise<unknown> {
    const answer = await this.send(opts, signal);
    try {
      return JSON.parse(answer.data.toString('utf8'));
    } catch {
      throw this.invalid(`sent an answer to ${opts.operation} that is not JSON`);
    }
  }

  private async attempt(opts: SendOptions, signal: AbortSignal): Promise<Answer> {
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), this.config.timeoutMs);
    const both = AbortSignal.any([signal, timer.signal]);
    const timedOut = () =>
      new ProviderError(
        504,
        'generation_timeout',
        `${this.name} did not answer ${opts.operation} within ${formatMs(this.config.timeoutMs)}`,
      );
    const maxBytes = opts.maxBytes ?? this.config.maxOutputBytes * 1.4 + JSON_SLACK_BYTES;
    try {
      const built = opts.body?.();
      const headers: Record<string, string> = {
        accept: 'application/json',
        ...this.config.headers,
        ...opts.headers,
      };
      if (opts.auth !== false && this.config.apiKey) headers.authorization = `Bearer ${this.config.apiKey}`;
      if (opts.auth === false) for (const k of Object.keys(this.config.headers)) delete headers[k];
      if (built?.contentType) headers['content-type'] = built.contentType;
      let res: Dispatcher.ResponseData;
      try {
        res = await request(opts.url, {
          method: opts.method,
          headers,
          body: built?.body ?? null,
          signal: both,
          ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
          headersTimeout: this.config.timeoutMs + 1000,
          bodyTimeout: this.config.timeoutMs + 1000,
        });
      } catch (err) {
        if (signal.aborted) throw abortReason(signal);
        if (timer.signal.aborted) throw timedOut();
        throw new ProviderError(
          502,
          'provider_error',
          redact(
            `${this.name} could not be reached for ${opts.operation}: ${transportCause(err)}`,
            this.secrets,
          ),
          true,
        );
      }
      res.body.on('error', () => {});
      if (res.statusCode >= 400) {
        let text = '';
        try {
          text = (await readCapped(res.body, 16 * 1024)).toString('utf8');
        } catch {}
        const status = res.statusCode;
        const retryable = status === 408 || status === 429 || status >= 500;
        const detail = text ? `: ${providerMessage(text)}` : '';
        throw new ProviderError(
          502,
          'provider_error',
          redact(`${this.name} answered HTTP ${status} to ${opts.operation}${detail}`, this.secrets),
          retryable,
          retryable ? parseRetryAfter(res.headers) : undefined,
        );
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        res.body.destroy();
        throw this.invalid(`sent an answer to ${opts.operation} larger than ${maxBytes} bytes`);
      }
      try {
        const data = await readCapped(res.body, maxBytes);
        return { status: res.statusCode, headers: res.headers, data };
      } catch (err) {
        if (err === TOO_LARGE)
          throw this.invalid(`sent an answer to ${opts.operation} larger than ${maxBytes} bytes`);
        if (signal.aborted) throw abortReason(signal);
        if (timer.signal.aborted) throw timedOut();
        throw new ProviderError(
          502,
          'provider_error',
          redact(
            `${this.name} broke off its answer to ${opts.operation}: ${transportCause(err)}`,
            this.secrets,
          ),
          true,
        );
      }
    } finally {
      clearTimeout(timeout);
    }
  }

  /**
   * Fetches an output URL (http(s) only) under the output cap. The API key goes along only to the
   * provider's own origin (hosted files elsewhere are usually signed URLs). A URL on another origin
   * goes through the address guard: a provider (or whoever answers for it) cannot make the service
   * fetch from the operator's network — loopback, private, link-local addresses are refused.
   */
  async fetchOutput(url: string, signal: AbortSignal): Promise<Buffer> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw this.invalid('gave an output URL that is not a URL');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      throw this.invalid('gave an output URL that is not http(s)');
    const sameOrigin = target.origin === new URL(this.config.baseUrl).origin;
    const dispatcher = sameOrigin ? undefined : await this.guardedDispatcher(target);
    try {
      const answer = await this.send(
        {
          method: 'GET',
          url: target.href,
          operation: 'the output download',
          maxBytes: this.config.maxOutputBytes,
          auth: sameOrigin,
          dispatcher,
        },
        signal,
      );
      return answer.data;
    } finally {
      dispatcher?.close().catch(() => {});
    }
  }

  /** A dispatcher pinned to the output host's judged address; refusals are 502s naming the host only. */
  private async guardedDispatcher(target: URL) {
    const host = hostOf(target);
    try {
      const pinned = await resolveAllowed(host, this.options.fetchPrivate === true);
      const timeout = this.config.timeoutMs + 1000;
      return pinnedAgent(pinned, { headersTimeout: timeout, bodyTimeout: timeout });
    } catch (err) {
      if (!(err instanceof AddressRefused)) throw err;
      if (err.reason === 'private')
        throw this.invalid(
          `gave an output URL on ${host}, a loopback, private or link-local address, which is not fetched`,
        );
      throw new ProviderError(
        502,
        'provider_error',
        redact(`${this.name} gave an output URL that does not resolve (${err.message})`, this.secrets),
      );
    }
  }
}

const TOO_LARGE = new Error('too large');

async function readCapped(body: Dispatcher.ResponseData['body'], max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    total += b.length;
    if (total > max) {
      body.destroy();
      throw TOO_LARGE;
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

/** What an output is, from its bytes: an image for t2i/i2i; a video (MP4/MOV/WebM) or an animated image for video. */
export function sniffOutput(
  data: Buffer,
  kind: MediaKind,
): { contentType: string; extension: string } | null {
  const image = sniffImage(data.subarray(0, 16));
  if (image) return image;
  if (kind !== 'video') return null;
  if (data.length >= 12 && data.subarray(4, 8).toString('latin1') === 'ftyp') {
    const brand = data.subarray(8, 12).toString('latin1');
    return brand === 'qt  '
      ? { contentType: 'video/quicktime', extension: 'mov' }
      : { contentType: 'video/mp4', extension: 'mp4' };
  }
  if (data.length >= 4 && data.readUInt32BE(0) === 0x1a45dfa3)
    return { contentType: 'video/webm', extension: 'webm' };
  return null;
}

/** Strict base64 (standard or URL-safe, whitespace and a `data:…;base64,` prefix tolerated) → bytes, or null. */
export function decodeBase64(text: string): Buffer | null {
  const clean = text.replace(/^data:[^,]*;base64,/i, '').replace(/\s+/g, '');
  if (clean.length === 0 || clean.length % 4 === 1 || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean)) return null;
  const data = Buffer.from(clean.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return data.length > 0 ? data : null;
}
