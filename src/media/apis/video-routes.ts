/**
 * OpenRouter's video API on the media service: `POST /api/v1/videos` accepts a job (202) and runs
 * it in the background (jobs/runner.ts); `GET /api/v1/videos/{id}` polls it, `GET …/content`
 * streams a finished video, `GET /api/v1/videos/models` lists the video routes. The gateway
 * forwards the same paths here. Jobs live in the gateway's database, so the API needs `keys` mode
 * (the media service's default under `serve`); a job is its key's workspace's alone.
 */

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Caller } from '../../accounts/caller.js';
import { TempFiles } from '../../lib/temp-files.js';
import type { MediaConfig } from '../config.js';
import { fetchImages } from '../fetch.js';
import { JOB_RETENTION_MS, type VideoJobRunner } from '../jobs/runner.js';
import type { JobScope } from '../jobs/store.js';
import type { MediaService } from '../service.js';
import { MediaError, type ObjectStore } from '../types.js';
import { validateGeneration } from '../validate.js';
import { API_PREFIX, droppedHeader, inlineImageBodyLimit } from './routes.js';
import type { WebhookSettings } from './video-callbacks.js';
import { jobAnswer, videoCall, videoJobId, videoModels } from './videos.js';

export interface VideoApiDeps {
  config: MediaConfig;
  service: MediaService;
  store: ObjectStore;
  /** Null when the media service has no database (`token` or `none` auth): the API is not served. */
  jobs: VideoJobRunner | null;
  /** Workspaces' default callback URLs (a job without `callback_url` takes its workspace's). */
  webhooks: Pick<WebhookSettings, 'callbackUrl'> | null;
}

/** The gateway's API base as its caller reached it (set when it forwards), for `polling_url`. */
export const BASE_URL_HEADER = 'x-gatehouse-base-url';

export async function videoApiRoutes(app: FastifyInstance, deps: VideoApiDeps): Promise<void> {
  const { config, service, store, jobs, webhooks } = deps;
  const started = Math.floor(Date.now() / 1000);
  const tags = ['openrouter'];

  app.get(
    `${API_PREFIX}videos/models`,
    { schema: { summary: 'Video models (OpenRouter catalog shape)', tags } },
    async () => videoModels(config.routes, started),
  );

  const bodyLimit = inlineImageBodyLimit(config);
  app.post(
    `${API_PREFIX}videos`,
    {
      bodyLimit,
      schema: {
        summary: 'Generate a video (OpenRouter video API)',
        description:
          'Accepts a job (202) and generates it in the background; poll `polling_url`. The model is `media/<route name>` of a video route. Fields the route has no equivalent for are listed in `x-gatehouse-dropped-fields`.',
        tags,
      },
    },
    async (req, reply) => {
      const runner = available(jobs);
      const caller = keyed(req.mediaCaller);
      const call = videoCall(req.body, config.routes);
      const valid = validateGeneration(call.route, call.input);
      // Admitted (limits, budgets, guardrail, filters) and its inputs fetched before it is accepted:
      // a job that cannot run is refused now, not failed later.
      const admitted = await service.admit(call.route, valid, caller);
      const temp = new TempFiles('media');
      const gone = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableFinished) gone.abort(new Error('client went away'));
      };
      reply.raw.once('close', onClose);
      let handedOver = false;
      try {
        const images = await fetchImages(admitted.imageUrls, temp, config, gone.signal);
        const id = videoJobId();
        const polling = pollingUrl(req, id);
        const callbackUrl = call.callbackUrl ?? (await webhooks?.callbackUrl(caller.workspaceId)) ?? null;
        await runner.store.create(
          {
            id,
            model: call.model,
            owner: runner.owner,
            scope: scopeOf(caller),
            callbackUrl,
            pollingUrl: polling,
          },
          Date.now(),
          JOB_RETENTION_MS,
        );
        runner.run(id, async (signal) => {
          try {
            const outputs = await service.generate(call.route, admitted, images, signal, caller);
            const cost = service.bills ? (call.route.priceUsd ?? 0) * outputs.length : 0;
            return {
              outputs: outputs.map(({ key, url, contentType }) => ({ key, url, contentType })),
              costUsd: cost,
            };
          } finally {
            admitted.hold?.release();
            await temp.cleanup();
          }
        });
        handedOver = true;
        const dropped = droppedHeader(call.dropped);
        if (dropped) reply.header('x-gatehouse-dropped-fields', dropped);
        return reply
          .code(202)
          .send(jobAnswer({ id, status: 'pending', outputs: [], costUsd: null, error: null }, polling));
      } finally {
        reply.raw.off('close', onClose);
        if (!handedOver) {
          admitted.hold?.release();
          await temp.cleanup();
        }
      }
    },
  );

  app.get(
    `${API_PREFIX}videos/:id`,
    { schema: { summary: 'A video job (OpenRouter video API)', tags } },
    async (req) => {
      const { id } = req.params as { id: string };
      const job = await findJob(req, id);
      return jobAnswer(job, pollingUrl(req, id));
    },
  );

  app.get(
    `${API_PREFIX}videos/:id/content`,
    { schema: { summary: "A finished video job's video", tags } },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const { index = '0' } = req.query as { index?: string };
      const job = await findJob(req, id);
      if (job.status !== 'completed')
        throw new MediaError(
          409,
          'not_ready',
          `The video job is ${job.status}: its content is there once completed`,
        );
      const n = /^\d{1,3}$/.test(String(index)) ? Number(index) : Number.NaN;
      const output = job.outputs[n];
      if (!output) throw new MediaError(404, 'not_found', `The job has no video at index ${index}`, 'index');
      const file = await store.open?.(output.key);
      if (!file) throw new MediaError(404, 'not_found', 'The video is no longer stored');
      reply.type(file.contentType);
      if (file.size !== undefined) reply.header('content-length', String(file.size));
      return reply.send(file.stream);
    },
  );

  /** The caller's job `id` (404 for any other workspace's). */
  async function findJob(req: FastifyRequest, id: string) {
    const runner = available(jobs);
    const caller = keyed(req.mediaCaller); // authenticated by the service's hook (needsCredential)
    const job = await runner.store.find(id, scopeOf(caller), Date.now());
    if (!job) throw new MediaError(404, 'not_found', 'There is no such video job', 'id');
    if (job.abandonedNow) runner.ended(id);
    return job;
  }

  /** Where this job is polled: under the gateway's API base when it forwarded the call, else here. */
  function pollingUrl(req: FastifyRequest, id: string): string {
    const given = req.headers[BASE_URL_HEADER];
    const base =
      typeof given === 'string' && /^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/i.test(given)
        ? given.replace(/\/+$/, '')
        : `${config.publicUrl ?? `${req.protocol}://${req.host}`}/api/v1`;
    return `${base}/videos/${encodeURIComponent(id)}`;
  }
}

function available(jobs: VideoJobRunner | null): VideoJobRunner {
  if (!jobs)
    throw new MediaError(
      404,
      'not_found',
      "The video API keeps its jobs in the gateway's database: run the media service with GATEHOUSE_MEDIA_AUTH=keys",
    );
  return jobs;
}

/** Jobs belong to a key's workspace: only `keys` mode has one (`available` checked the mode). */
function keyed(caller: Caller | null): Caller {
  if (!caller) throw new MediaError(401, 'unauthorized', 'An API key is required');
  return caller;
}

const scopeOf = (c: Caller): JobScope => ({ organizationId: c.organizationId, workspaceId: c.workspaceId });
