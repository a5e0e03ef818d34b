/**
 * Generation: hands a validated request to its route's generator under the deadline, stores each
 * output under `<kind>/<yyyy>/<mm>/<dd>/<uuid>.<ext>`, and keeps the recent generation times behind
 * the status hint. Knows nothing of HTTP.
 */

import type { Caller } from '../accounts/caller.js';
import { objectKey } from './object-keys.js';
import { type GenerationQueue, tenantOf } from './queue.js';
import {
  type GeneratedOutput,
  type GenerateRequest,
  type InputImage,
  type MediaBilling,
  MediaError,
  type MediaGenerator,
  type MediaHold,
  type MediaRoute,
  type ObjectStore,
  providerSlugOf,
} from './types.js';
import type { ValidatedRequest } from './validate.js';

/** A request admitted for an API key: a priced one holds its spend reservation until it ends. */
export interface AdmittedRequest extends ValidatedRequest {
  hold?: MediaHold | null;
}

/** A stored output: where it is, and its bytes (the OpenRouter-shaped routes answer them inline). */
export interface StoredOutput {
  url: string;
  key: string;
  contentType: string;
  data: Buffer;
}

/** How many recent generation times the median is taken over. */
export const STATUS_WINDOW = 100;

export interface MediaStatus {
  status: 'online';
  median_generation_ms: number | null;
  generations: number;
  /** Generations running now, and waiting for a slot (queue.ts). */
  running: number;
  queued: number;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : Math.round(((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2);
}

export class MediaService {
  private readonly recent: number[] = [];
  private count = 0;
  /** The concurrency limit and its queue (set by server.ts); null → unlimited. */
  queue: GenerationQueue | null = null;

  constructor(
    private readonly generators: Record<string, MediaGenerator>,
    private readonly store: ObjectStore,
    private readonly timeoutMs: number,
    /** Charges priced routes to the caller (API-key auth only); null → nothing is charged. */
    private readonly billing: MediaBilling | null = null,
  ) {}

  /** Whether generations by API keys are charged (the gateway's billing is wired in). */
  get bills(): boolean {
    return this.billing !== null;
  }

  /** Throws when a route names a provider no generator serves (checked at start-up). */
  checkRoutes(routes: MediaRoute[]): void {
    for (const r of routes) {
      if (!this.generators[r.provider])
        throw new Error(`Media route ${r.kind}/${r.name}: no generator for provider "${r.provider}"`);
    }
  }

  status(): MediaStatus {
    return {
      status: 'online',
      median_generation_ms: median(this.recent),
      generations: this.count,
      ...(this.queue?.counts() ?? { running: 0, queued: 0 }),
    };
  }

  /**
   * Admits an API key's request before any work is done for it (images fetched, a slot taken):
   * the key's limits and guardrail (MediaBilling.admit). Returns the request to generate, its
   * prompt as the content filters left it. Without billing (no shared database) or caller, as is.
   */
  async admit(route: MediaRoute, input: ValidatedRequest, caller: Caller | null): Promise<AdmittedRequest> {
    if (!this.billing || !caller) return input;
    const { prompt, hold } = await this.billing.admit(caller, {
      model: `media/${route.kind}/${route.name}`,
      provider: providerSlugOf(route),
      costUsd: route.priceUsd ?? 0,
      prompt: input.prompt,
    });
    return { ...input, prompt, hold };
  }

  /** Generates `input` (admitted by `admit` first when a caller is known) and stores the outputs. */
  async generate(
    route: MediaRoute,
    input: AdmittedRequest,
    images: InputImage[],
    cancel?: AbortSignal,
    caller: Caller | null = null,
  ): Promise<StoredOutput[]> {
    const generator = this.generators[route.provider];
    if (!generator) throw new Error(`No generator for provider ${route.provider}`);
    const price = route.priceUsd ?? 0;
    const billed = this.billing && caller && price > 0 ? { billing: this.billing, caller } : null;
    const req: GenerateRequest = {
      kind: route.kind,
      route: route.name,
      providerModel: route.providerModel,
      prompt: input.prompt,
      params: input.params,
      images,
    };
    // Waits for a generation slot (429 queue_full when the queue is full; leaves it if cancelled).
    const release = this.queue ? await this.queue.acquire(cancel, tenantOf(caller)) : null;
    const controller = new AbortController();
    const onCancel = () => controller.abort(cancel?.reason);
    cancel?.addEventListener('abort', onCancel, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const started = performance.now();
    try {
      const work = generator.generate(req, controller.signal);
      work.catch(() => {}); // settled after a timeout: nobody waits for it any more
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const err = new MediaError(
            504,
            'generation_timeout',
            `Generation did not finish within ${Math.round(this.timeoutMs / 1000)} s`,
          );
          controller.abort(err);
          reject(err);
        }, this.timeoutMs);
      });
      const outputs = await Promise.race([work, deadline]);
      checkOutputs(outputs);
      const elapsed = Math.round(performance.now() - started);
      const stored = await this.storeAll(route, outputs);
      this.recent.push(elapsed);
      if (this.recent.length > STATUS_WINDOW) this.recent.shift();
      this.count += 1;
      await billed?.billing.record(
        billed.caller,
        {
          kind: route.kind,
          route: route.name,
          provider: route.provider,
          providerModel: route.providerModel,
          costUsd: price * stored.length,
          latencyMs: elapsed,
        },
        input.hold,
      );
      return stored;
    } finally {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
      release?.();
      input.hold?.release(); // a failed generation costs nothing (a settled one: no-op)
    }
  }

  /**
   * Stores every output, or none: when one cannot be stored (507 storage_full, …) the ones that
   * were are removed again, so a failed generation leaves nothing behind.
   */
  private async storeAll(route: MediaRoute, outputs: GeneratedOutput[]): Promise<StoredOutput[]> {
    const results = await Promise.allSettled(
      outputs.map((o) => this.store.put(objectKey(route.kind, o.extension), o.data, o.contentType)),
    );
    const failure = results.find((r) => r.status === 'rejected');
    if (!failure)
      return results.map((r, i) => {
        const { url, key } = (r as PromiseFulfilledResult<{ url: string; key: string }>).value;
        const { contentType, data } = outputs[i] as GeneratedOutput;
        return { url, key, contentType, data };
      });
    await Promise.all(
      results.map((r) =>
        r.status === 'fulfilled' ? this.store.delete?.(r.value.key).catch(() => {}) : undefined,
      ),
    );
    throw failure.reason;
  }
}

function checkOutputs(outputs: unknown): asserts outputs is GeneratedOutput[] {
  const ok =
    Array.isArray(outputs) &&
    outputs.length > 0 &&
    outputs.every(
      (o: GeneratedOutput) =>
        o &&
        Buffer.isBuffer(o.data) &&
        o.data.length > 0 &&
        typeof o.contentType === 'string' &&
        typeof o.extension === 'string' &&
        /^[a-z0-9]{1,8}$/.test(o.extension),
    );
  if (!ok) throw new MediaError(502, 'invalid_output', 'The generator returned no usable output');
}
