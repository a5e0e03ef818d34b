import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * Spans packed as they end, for the export thread (export-thread.ts): one flat array per span
 * instead of the SDK's span object and the dozen objects around it. The SDK's span dies young
 * (a span would otherwise wait in the batch processor's queue for up to a batch and be promoted
 * to the old generation), and the batch crosses to the thread with fewer objects to clone:
 * attribute keys are sent once each, as numbers after that.
 *
 * The layout (the thread's `span()` reads it by position):
 *   0 name, 1 kind, 2 traceId, 3 spanId, 4 traceFlags, 5 traceState (serialized) | undefined,
 *   6 parentSpanId | undefined, 7 parentIsRemote, 8–9 startTime [s, ns], 10–11 endTime [s, ns],
 *   12 status code, 13 status message, 14 droppedAttributesCount, 15 events | 0,
 *   16 droppedEventsCount, 17 links (plain records) | 0, 18 droppedLinksCount, 19 scope index,
 *   20… attributes as key, value pairs (the key: its index in the key table, or itself).
 */
export const ATTRIBUTES_AT = 20;

/** Past this many distinct keys, keys are sent as strings (the table never grows unbounded). */
const MAX_KEYS = 1024;

type Scope = ReadableSpan['instrumentationScope'];

/** What the batch processor reads of a span it queues: its trace flags, its resource. */
export class PackedSpan {
  constructor(
    readonly fields: unknown[],
    readonly resource: ReadableSpan['resource'],
    readonly traceFlags: number,
  ) {}

  spanContext(): { traceFlags: number } {
    return this;
  }
}

/** Packs spans; the keys and scopes first seen since the last batch go with the next one. */
export class SpanPacker {
  private readonly keys = new Map<string, number>();
  private newKeys: string[] = [];
  private readonly scopes = new Map<Scope, number>();
  private newScopes: [number, Scope][] = [];

  pack(s: ReadableSpan): PackedSpan {
    const ctx = s.spanContext();
    const parent = s.parentSpanContext;
    const f: unknown[] = [
      s.name,
      s.kind,
      ctx.traceId,
      ctx.spanId,
      ctx.traceFlags,
      ctx.traceState?.serialize(),
      parent?.spanId,
      parent?.isRemote,
      s.startTime[0],
      s.startTime[1],
      s.endTime[0],
      s.endTime[1],
      s.status.code,
      s.status.message,
      s.droppedAttributesCount,
      s.events.length ? s.events : 0,
      s.droppedEventsCount,
      s.links.length
        ? s.links.map((l) => ({
            traceId: l.context.traceId,
            spanId: l.context.spanId,
            traceFlags: l.context.traceFlags,
            traceState: l.context.traceState?.serialize(),
            isRemote: l.context.isRemote,
            attributes: l.attributes,
            droppedAttributesCount: l.droppedAttributesCount,
          }))
        : 0,
      s.droppedLinksCount,
      this.scopeIndex(s.instrumentationScope),
    ];
    const attributes = s.attributes;
    for (const key in attributes) f.push(this.keyOf(key), attributes[key]);
    return new PackedSpan(f, s.resource, ctx.traceFlags);
  }

  /** The keys (in table order) and scopes first packed since the last call. */
  takeNew(): { keys: string[]; scopes: [number, Scope][] } {
    const out = { keys: this.newKeys, scopes: this.newScopes };
    if (this.newKeys.length) this.newKeys = [];
    if (this.newScopes.length) this.newScopes = [];
    return out;
  }

  private keyOf(key: string): number | string {
    let i = this.keys.get(key);
    if (i === undefined) {
      if (this.keys.size >= MAX_KEYS) return key;
      i = this.keys.size;
      this.keys.set(key, i);
      this.newKeys.push(key);
    }
    return i;
  }

  private scopeIndex(scope: Scope): number {
    let i = this.scopes.get(scope);
    if (i === undefined) {
      i = this.scopes.size;
      this.scopes.set(scope, i);
      this.newScopes.push([i, { name: scope.name, version: scope.version, schemaUrl: scope.schemaUrl }]);
    }
    return i;
  }
}

/**
 * Packs each sampled span as it ends and hands the packed span to the SDK's batch processor
 * (`next`: its queue, batches and OTEL_BSP_* settings), whose exporter is the export thread's.
 */
export class PackingSpanProcessor implements SpanProcessor {
  constructor(
    private readonly next: SpanProcessor,
    private readonly packer: SpanPacker,
  ) {}

  onStart(span: Span, parentContext: Context): void {
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    // Not sampled: the batch processor would drop it, so it is not packed.
    if ((span.spanContext().traceFlags & 1) === 0) return;
    this.next.onEnd(this.packer.pack(span) as unknown as ReadableSpan);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}
