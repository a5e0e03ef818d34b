/**
 * Bedrock's errors: an HTTP status with `x-amzn-ErrorType: ThrottlingException:http://…` and a
 * `{"message": …}` body, or, inside a 200 event stream, an `exception` message whose
 * `:exception-type` names the error (`throttlingException`, `modelStreamErrorException` …). Both
 * become an UpstreamError carrying the error type in its message; what the router may fall back on
 * follows the type (throttling, capacity, timeouts and server faults), not only the status.
 */
import { type ErrorShape, nonEmpty, obj } from '../errors.js';
import { redact } from '../redact.js';
import { UpstreamError } from '../types.js';

/** The status of each error type (what AWS answers over HTTP; stream exceptions have none). */
const STATUS: Record<string, number> = {
  ValidationException: 400,
  ServiceQuotaExceededException: 400,
  UnrecognizedClientException: 403,
  InvalidSignatureException: 403,
  AccessDeniedException: 403,
  ExpiredTokenException: 403,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 408,
  ModelErrorException: 424,
  ModelNotReadyException: 429,
  ThrottlingException: 429,
  InternalServerException: 500,
  ModelStreamErrorException: 502,
  ServiceUnavailableException: 503,
};

/** Worth another provider (or a retry): capacity, throttling, timeouts and faults upstream. */
const RETRYABLE = new Set([
  'ModelTimeoutException',
  'ModelErrorException',
  'ModelNotReadyException',
  'ThrottlingException',
  'InternalServerException',
  'ModelStreamErrorException',
  'ServiceUnavailableException',
]);

/** `ThrottlingException:http://internal.amazon.com/…` or `throttlingException` → `ThrottlingException`. */
export function errorType(raw: string | undefined): string | undefined {
  const name = raw?.split(':')[0]?.trim();
  return name ? name.charAt(0).toUpperCase() + name.slice(1) : undefined;
}

/** Bedrock's error body: `{"message": …}` (some services spell it `Message`). */
export const bedrockErrors: ErrorShape = {
  message: (body) => nonEmpty(obj(body).message) ?? nonEmpty(obj(body).Message),
};

/** An HTTP error (already read by the shared code) with its Bedrock error type applied. */
export function withErrorType(err: UpstreamError, typeHeader: string | undefined): UpstreamError {
  const type = errorType(typeHeader);
  if (!type) return err;
  return new UpstreamError(err.status, `${type}: ${err.message}`, {
    retryable: RETRYABLE.has(type) || err.retryable,
    body: err.body,
    ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
  });
}

/** An `exception` message of an event stream (its `:exception-type` and JSON body) → UpstreamError. */
export function streamException(
  typeHeader: string | undefined,
  body: unknown,
  secrets: readonly (string | null | undefined)[],
): UpstreamError {
  const type = errorType(typeHeader) ?? 'InternalServerException';
  const message = bedrockErrors.message(body) ?? 'the stream failed';
  return new UpstreamError(STATUS[type] ?? 502, redact(`${type}: ${message}`, secrets), {
    retryable: RETRYABLE.has(type) || !(type in STATUS),
    body,
  });
}
