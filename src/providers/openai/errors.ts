import { type ErrorShape, nonEmpty, obj } from '../errors.js';
import { redact } from '../redact.js';
import { UpstreamError } from '../types.js';

/**
 * OpenAI's error body `{error: {message, type, param, code}}`, and what OpenAI-compatible servers
 * send instead: `{error: "text"}`, `{message}` or `{detail}` (FastAPI-based servers).
 */
export const openAiErrors: ErrorShape = {
  message(body) {
    const b = obj(body);
    if (typeof b.error === 'string' && b.error) return b.error;
    return nonEmpty(obj(b.error).message) ?? nonEmpty(b.message) ?? nonEmpty(b.detail);
  },
};

/**
 * An error reported with a 200 status (in a stream, or by servers that always answer 200):
 * `{error: {message, code?}}` → UpstreamError (status from a numeric `code`, else 502), its message
 * read with the provider's error shape (Azure's names the content-filter categories).
 */
export function throwIfErrorPayload(
  raw: unknown,
  secrets: (string | null | undefined)[],
  isErrorEvent = false,
  shape: ErrorShape = openAiErrors,
): void {
  if (!raw || typeof raw !== 'object') return;
  const err = (raw as { error?: unknown }).error;
  if (!err && !isErrorEvent) return;
  const e = obj(err);
  const code =
    typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : Number(e.code) || 502;
  const status = code >= 400 && code <= 599 ? code : 502;
  const msg = redact(shape.message(raw) ?? 'upstream reported an error', secrets);
  throw new UpstreamError(status, msg, { body: raw });
}
