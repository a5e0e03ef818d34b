/** What every Vertex AI call carries: the operator's headers, never a credential of theirs, and the token. */
import type { CallContext } from '../types.js';

/** The configured headers without any credential header, and `Authorization: Bearer <token>`. */
export function bearerHeaders(
  configured: Record<string, string> | undefined,
  ctx: CallContext,
): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(configured ?? {}))
    if (!/^(authorization|x-goog-api-key|x-api-key)$/i.test(k)) h[k] = v;
  if (ctx.apiKey) h.authorization = `Bearer ${ctx.apiKey}`;
  return h;
}
