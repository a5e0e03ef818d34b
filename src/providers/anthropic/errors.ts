import { type ErrorShape, nonEmpty, obj } from '../errors.js';
import { redact } from '../redact.js';
import { UpstreamError } from '../types.js';

/** Anthropic's error body: `{type: 'error', error: {type, message}}`. */
export const anthropicErrors: ErrorShape = {
  message: (body) => nonEmpty(obj(obj(body).error).message) ?? nonEmpty(obj(body).message),
};

/** HTTP status of each Anthropic error type (for errors that arrive inside a 200 stream). */
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** An Anthropic `{type:'error', error:{type, message}}` (e.g. a stream `error` event) → UpstreamError. */
export function anthropicStreamError(raw: unknown, secrets?: (string | null | undefined)[]): UpstreamError {
  const e = obj(obj(raw).error);
  const type = typeof e.type === 'string' ? e.type : 'api_error';
  const status = ERROR_STATUS[type] ?? 500;
  const message = typeof e.message === 'string' && e.message ? e.message : type;
  return new UpstreamError(status, redact(message, secrets), { body: raw });
}
