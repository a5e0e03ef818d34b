/**
 * `task-api`: an asynchronous task API, submitted and polled until done, as hosted video and image
 * models are served. This is a GENERIC wire shape modelled on Replicate/fal-style queues, not any
 * one vendor's API; a provider speaking something else needs its own adapter (or a thin proxy).
 * `Authorization: Bearer <api key>` on every call.
 *
 *   submit  POST {base}/tasks              Idempotency-Key: <uuid> (one per generation, the same on retries)
 *           {"model": "<provider_model>",
 *            "input": {"prompt": "…", <the route's other params, as validated>,
 *                      "image_urls": ["data:image/png;base64,…", …],      (only with input images)
 *                      "mask_url": "data:image/png;base64,…"}}           (only with a route's `mask`)
 *           → 200/201/202 {"id": "…", "status": "…", …}   (a task may already be finished: same shape as poll)
 *   poll    GET  {base}/tasks/{id}          every poll_interval_ms
 *           → {"id", "status": "queued"|"pending"|"starting"|"running"|"processing"|"in_progress"
 *                             |"succeeded"|"completed"|"success"
 *                             |"failed"|"error"|"canceled"|"cancelled"|"expired",
 *              "outputs": [{"url": "https://…", "content_type"?: "video/mp4"} | {"b64": "…"}],
 *              "error": {"message": "…"} | "…"}
 *   cancel  POST {base}/tasks/{id}/cancel   best effort, when the deadline passes or the client leaves
 *
 * Input images go inline as `data:` URLs (base64 of the temp file), in the order the route lists
 * its image parameters; each is capped at `max_inline_bytes` (default 10 MiB → 400 file_too_large).
 * The URL-valued parameters they came from (`image`, `image_input`, `reference_images`) are not
 * forwarded: the service already fetched them, and the provider gets the bytes.
 *
 * Outcomes: succeeded → outputs fetched (URL, under `max_output_bytes`) or decoded (`b64`), each
 * sniffed (PNG/JPEG/WebP/GIF; for video also MP4/MOV/WebM) → else 502 invalid_provider_response;
 * failed → 502 provider_error with the task's `error.message`; the service's deadline (its abort
 * signal) → 504 generation_timeout and the task cancelled.
 */

import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type GeneratedOutput,
  type GenerateRequest,
  MASK_PARAM,
  MediaError,
  type MediaGenerator,
} from '../types.js';
import type { MediaProviderConfig } from './config.js';
import {
  decodeBase64,
  ProviderError,
  ProviderHttp,
  type ProviderHttpOptions,
  redact,
  sniffOutput,
} from './http.js';

const DONE = new Set(['succeeded', 'completed', 'success', 'successful']);
const FAILED = new Set(['failed', 'error', 'canceled', 'cancelled', 'expired']);
/** How long a best-effort cancel may take. */
const CANCEL_TIMEOUT_MS = 5000;

interface Task {
  id?: unknown;
  status?: unknown;
  outputs?: unknown;
  output?: unknown;
  error?: unknown;
}

export class TaskApiGenerator implements MediaGenerator {
  readonly http: ProviderHttp;

  constructor(config: MediaProviderConfig, options: ProviderHttpOptions = {}) {
    this.http = new ProviderHttp(config, options);
  }

  async generate(req: GenerateRequest, signal: AbortSignal): Promise<GeneratedOutput[]> {
    signal.throwIfAborted();
    const input = await this.input(req);
    signal.throwIfAborted();
    const body = JSON.stringify({ model: req.providerModel, input });
    const idempotencyKey = randomUUID();
    let task = this.task(
      await this.http.json(
        {
          method: 'POST',
          url: this.http.url('tasks'),
          operation: 'task submit',
          body: () => ({ body, contentType: 'application/json' }),
          // One key for every attempt: a submit retried after its answer was lost (a timeout, a
          // 5xx from a proxy after the task was made) is the same task, not a second one.
          headers: { 'idempotency-key': idempotencyKey },
        },
        signal,
      ),
    );
    const id = typeof task.id === 'string' || typeof task.id === 'number' ? String(task.id) : '';
    if (!id && !DONE.has(String(task.status)))
      throw this.http.invalid('answered the task submit without an id');
    try {
      while (!this.finished(task)) {
        await sleep(this.http.config.pollIntervalMs, undefined, { signal });
        task = this.task(
          await this.http.json(
            {
              method: 'GET',
              url: this.http.url(`tasks/${encodeURIComponent(id)}`),
              operation: `task ${id} poll`,
            },
            signal,
          ),
        );
      }
    } catch (err) {
      if (signal.aborted && id) this.cancel(id);
      if (signal.aborted) {
        const r: unknown = signal.reason;
        throw r instanceof Error ? r : new DOMException('The operation was aborted', 'AbortError');
      }
      if (err instanceof ProviderError && err.code === 'generation_timeout' && id) this.cancel(id);
      throw err;
    }
    const status = String(task.status);
    if (FAILED.has(status)) {
      const e = task.error;
      const msg =
        typeof e === 'string' && e
          ? e
          : e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string'
            ? (e as { message: string }).message
            : `the task ended ${status}`;
      throw new ProviderError(
        502,
        'provider_error',
        redact(`${this.http.name} task ${id} ${status}: ${msg}`, this.http.secrets),
      );
    }
    return this.outputs(task, req, signal);
  }

  /** The task's `input`: prompt, the params that are not image URLs, and images as data: URLs. */
  private async input(req: GenerateRequest): Promise<Record<string, unknown>> {
    const imageParams = new Set(req.images.map((i) => i.param));
    const input: Record<string, unknown> = { prompt: req.prompt };
    for (const [k, v] of Object.entries(req.params)) if (!imageParams.has(k)) input[k] = v;
    if (req.images.length > 0) {
      const max = this.http.config.maxInlineBytes;
      const urls: string[] = [];
      for (const image of req.images) {
        if (image.bytes > max)
          throw new MediaError(
            400,
            'file_too_large',
            `${image.param} is larger than the ${max} bytes ${this.http.name} accepts inline`,
            image.param,
          );
        const url = `data:${image.contentType};base64,${(await readFile(image.path)).toString('base64')}`;
        if (image.param === MASK_PARAM) input.mask_url = url;
        else urls.push(url);
      }
      if (urls.length > 0) input.image_urls = urls;
    }
    return input;
  }

  private task(answer: unknown): Task {
    if (!answer || typeof answer !== 'object' || Array.isArray(answer))
      throw this.http.invalid('sent a task that is not an object');
    const t = answer as Task;
    if (typeof t.status !== 'string' || !t.status) throw this.http.invalid('sent a task without a status');
    return t;
  }

  private finished(task: Task): boolean {
    const s = String(task.status);
    return DONE.has(s) || FAILED.has(s);
  }

  /** Best effort, in the background, not tied to the (aborted) request signal. */
  private cancel(id: string): void {
    this.http
      .send(
        {
          method: 'POST',
          url: this.http.url(`tasks/${encodeURIComponent(id)}/cancel`),
          operation: `task ${id} cancel`,
          attempts: 1,
          body: () => ({ body: '{}', contentType: 'application/json' }),
        },
        AbortSignal.timeout(CANCEL_TIMEOUT_MS),
      )
      .catch(() => {});
  }

  private async outputs(task: Task, req: GenerateRequest, signal: AbortSignal): Promise<GeneratedOutput[]> {
    const list = task.outputs ?? task.output;
    const items = Array.isArray(list) ? list : list ? [list] : [];
    if (items.length === 0) throw this.http.invalid('finished a task without any output');
    const out: GeneratedOutput[] = [];
    for (const raw of items) {
      const item = (typeof raw === 'string' ? { url: raw } : (raw ?? {})) as { url?: unknown; b64?: unknown };
      let bytes: Buffer;
      if (typeof item.b64 === 'string') {
        const decoded = decodeBase64(item.b64);
        if (!decoded) throw this.http.invalid('sent an output whose b64 is not valid base64');
        if (decoded.length > this.http.config.maxOutputBytes)
          throw this.http.invalid(`sent an output larger than ${this.http.config.maxOutputBytes} bytes`);
        bytes = decoded;
      } else if (typeof item.url === 'string') {
        bytes = await this.http.fetchOutput(item.url, signal);
      } else throw this.http.invalid('sent an output with neither url nor b64');
      const type = sniffOutput(bytes, req.kind);
      if (!type)
        throw this.http.invalid(
          req.kind === 'video'
            ? 'sent an output that is neither a video (MP4, MOV, WebM) nor an animated image'
            : 'sent an output that is not a PNG, JPEG, WebP or GIF image',
        );
      out.push({ data: bytes, ...type });
    }
    return out;
  }
}
