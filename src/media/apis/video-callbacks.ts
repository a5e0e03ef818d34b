/**
 * OpenRouter's video webhooks: when a job with a `callback_url` ends, its event is POSTed there —
 * `{type: "video.generation.<status>", created_at, data: <the job as its poll answers it>}` with
 * `X-OpenRouter-Idempotency-Key: <job id>-<status>` — through the SSRF guard (lib/guarded-post.ts),
 * signed when the job's workspace has a signing secret (`X-OpenRouter-Signature`, below).
 * Failures worth it are retried with backoff; a callback is a notification, the job's poll stays
 * its record (retries pending when the process stops are dropped, and said so in the log).
 */

import { createHmac } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { WorkspaceWebhooks } from '../../accounts/workspace-webhooks.js';
import { type DeliveryOptions, post } from '../../lib/guarded-post.js';
import { settledWithin } from '../../lib/time.js';
import type { VideoJob } from '../jobs/store.js';
import { jobAnswer } from './videos.js';

/** How long after a failed attempt each retry goes (then the delivery is given up). */
export const RETRY_DELAYS_MS = [2_000, 15_000, 60_000];

export const IDEMPOTENCY_HEADER = 'x-openrouter-idempotency-key';
export const SIGNATURE_HEADER = 'x-openrouter-signature';

/**
 * OpenRouter's signature of an event: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>,<raw body>">`
 * under the workspace's signing secret. Made per attempt, so a retry carries a fresh time.
 */
export function eventSignature(secret: string, body: string, nowSeconds = Math.floor(Date.now() / 1000)) {
  const mac = createHmac('sha256', secret).update(`${nowSeconds},${body}`).digest('hex');
  return `t=${nowSeconds},v1=${mac}`;
}

/** The workspaces' video webhook settings (accounts/workspace-webhooks.ts), read as a job starts and ends. */
export type WebhookSettings = Pick<WorkspaceWebhooks, 'callbackUrl' | 'signingSecret'>;

/** The event a job's end sends. */
export function callbackEvent(job: VideoJob, now = Date.now()) {
  return {
    type: `video.generation.${job.status}`,
    created_at: new Date(now).toISOString(),
    data: { ...jobAnswer(job, job.pollingUrl ?? ''), model: job.model },
  };
}

export class VideoCallbacks {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly log: FastifyBaseLogger,
    /** The jobs, read back when one ends: the event says what was recorded. */
    private readonly jobs: { get(id: string): Promise<VideoJob | null> },
    /** Where the workspaces' signing secrets are read; null: events go unsigned. */
    private readonly secrets: WebhookSettings | null,
    private readonly opts: DeliveryOptions & { retryDelaysMs?: number[] },
  ) {}

  /** Job `id` ended (completed, failed, or found abandoned): its event goes to its callback. */
  ended(id: string): void {
    this.track(
      this.jobs
        .get(id)
        .then((job) => {
          if (job) this.send(job);
        })
        .catch((err) =>
          this.log.warn({ err: { message: (err as Error).message }, job: id }, 'video job callback failed'),
        ),
    );
  }

  /** Sends the ended job's event to its callback (nothing when it has none), signed if its workspace signs. */
  send(job: VideoJob): void {
    const url = job.callbackUrl;
    if (!url || this.closed) return;
    // The callback's host is the caller's: only its name goes to the log, never the URL's query.
    const where = { job: job.id, host: new URL(url).host };
    const secret = this.secrets ? this.secrets.signingSecret(job.workspaceId) : Promise.resolve(null);
    this.track(
      secret.then(
        (signingSecret) => this.deliver(job, url, signingSecret, where),
        // A secret that cannot be read (no master key here): an unsigned event would be refused.
        (err) =>
          this.log.warn(
            { ...where, reason: (err as Error).message },
            'video job callback not delivered: its signing secret cannot be read',
          ),
      ),
    );
  }

  private deliver(job: VideoJob, url: string, secret: string | null, where: object): void {
    const body = JSON.stringify(callbackEvent(job));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'gatehouse-media',
      [IDEMPOTENCY_HEADER]: `${job.id}-${job.status}`,
    };
    const delays = this.opts.retryDelaysMs ?? RETRY_DELAYS_MS;
    const attempt = (n: number): void => {
      if (secret !== null) headers[SIGNATURE_HEADER] = eventSignature(secret, body);
      const sent = post(url, { method: 'POST', headers, body }, this.opts).then((res) => {
        if (res.ok) return;
        const delay = delays[n];
        if (!res.retry || delay === undefined || this.closed) {
          this.log.warn({ ...where, reason: res.reason }, 'video job callback not delivered');
          return;
        }
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          attempt(n + 1);
        }, delay);
        timer.unref();
        this.timers.add(timer);
      });
      this.track(sent);
    };
    attempt(0);
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /**
   * Sends what has ended so far (the jobs shutdown failed included), waiting up to `waitMs` for
   * the deliveries under way; retries not yet due are dropped.
   */
  async close(waitMs = 5_000): Promise<void> {
    const drained = (async () => {
      // A read that ends in a send adds its delivery: wait until nothing is left.
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    })();
    await settledWithin(drained, waitMs);
    this.closed = true;
    if (this.timers.size > 0)
      this.log.warn({ dropped: this.timers.size }, 'video job callback retries dropped at shutdown');
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
