/**
 * Vertex AI's error bodies. Vertex itself (authentication, quota, unknown model) answers Google's
 * `{error: {code, message, status}}` for both publishers; Claude's own errors keep Anthropic's
 * `{type: 'error', error: {type, message}}`. Gemini calls read Google's shape (`google/errors.ts`).
 */
import { anthropicErrors } from '../anthropic/errors.js';
import { type ErrorShape, obj } from '../errors.js';
import { googleErrors } from '../google/errors.js';

/** Claude on Vertex: Vertex's own errors (Google's shape, with its status name), else Anthropic's. */
export const vertexClaudeErrors: ErrorShape = {
  message: (body) =>
    typeof obj(obj(body).error).status === 'string'
      ? googleErrors.message(body)
      : anthropicErrors.message(body),
  retryAfterMs: (body) => googleErrors.retryAfterMs?.(body),
};
