import { inSpan, SpanKind, type TraceParent } from './spans.js';

/** Spans of the work that runs outside a caller's request: one per batch request run, a trace of its own. */

/** One run of a batch request; a failed outcome (returned, not thrown) ends it as an error. */
export function traceBatchRequest<T extends { kind: string; status?: number; message?: string }>(
  batch: { id: string; endpoint: string },
  item: { idx: number; attempts: number },
  keyHash: string,
  run: (trace: TraceParent | undefined) => Promise<T>,
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
      const out = await run(span?.context);
      if (span && out.kind === 'failed')
        span.fail(new Error(out.message ?? 'batch request failed'), { 'error.type': String(out.status) });
      return out;
    },
  );
}
