import { ROOT_CONTEXT } from '@opentelemetry/api';
import { inSpan, SpanKind, type TraceParent } from './spans.js';

/**
 * Spans of the work that runs outside a caller's request: one per batch request run (each a trace
 * of its own, its attempts under it) and the model calls of an intern's run (under the run's
 * request, whose trace context the run grant carries).
 */

/** One run of a batch request; a failed outcome (returned, not thrown) ends it as an error. */
export function traceBatchRequest<T extends { kind: string; status?: number; message?: string }>(
  batch: { id: string; endpoint: string },
  item: { idx: number; attempts: number },
  keyHash: string,
  run: () => Promise<T>,
): Promise<T> {
  return inSpan(
    'batch.request',
    SpanKind.INTERNAL,
    () => ({
      'gatehouse.batch.id': batch.id,
      'gatehouse.batch.endpoint': batch.endpoint,
      'gatehouse.batch.request_index': item.idx,
      'gatehouse.batch.request_attempt': item.attempts,
      'gatehouse.key_hash_prefix': keyHash.slice(0, 12),
    }),
    async (span) => {
      const out = await run();
      if (span && out.kind === 'failed')
        span.fail(new Error(out.message ?? 'batch request failed'), { 'error.type': String(out.status) });
      return out;
    },
    // Its own trace: the worker may have been woken inside the request that created the batch.
    ROOT_CONTEXT,
  );
}

/** Parent of the spans of an intern run's model calls: the run's request (null: not traced). */
export type RunTrace = TraceParent | undefined;
