import { type ErrorShape, obj } from '../errors.js';
import { redact } from '../redact.js';
import { UpstreamError } from '../types.js';

/**
 * Google's error body `{error: {code, message, status, details}}`: the message is prefixed with the
 * status (`RESOURCE_EXHAUSTED: …`), and a RetryInfo detail's `retryDelay` ("30s") is a retry delay.
 */
export const googleErrors: ErrorShape = {
  message(body) {
    const e = obj(obj(body).error);
    if (typeof e.message !== 'string' || !e.message) return undefined;
    return typeof e.status === 'string' && e.status ? `${e.status}: ${e.message}` : e.message;
  },
  retryAfterMs(body) {
    const details = obj(obj(body).error).details;
    if (!Array.isArray(details)) return undefined;
    for (const d of details) {
      const delay = obj(d).retryDelay;
      if (typeof delay === 'string') {
        const m = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim());
        if (m) return Math.round(Number(m[1]) * 1000);
      }
    }
    return undefined;
  },
};

const STATUS_BY_NAME: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

/** `{error:{code, message, status}}` inside a 200 answer or stream → UpstreamError. */
export function geminiStreamError(raw: unknown, secrets?: (string | null)[]): UpstreamError {
  const e = obj(obj(raw).error);
  const status =
    typeof e.code === 'number' && e.code >= 400 && e.code <= 599
      ? e.code
      : (STATUS_BY_NAME[String(e.status)] ?? 500);
  const message = typeof e.message === 'string' && e.message ? e.message : 'upstream reported an error';
  const text = typeof e.status === 'string' ? `${e.status}: ${message}` : message;
  return new UpstreamError(status, redact(text, secrets), { body: raw });
}
