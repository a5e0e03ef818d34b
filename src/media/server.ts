import type { Caller } from '../accounts/caller.js';
/**
 * The media service's HTTP app: Fastify with streamed multipart, the routes from configuration,
 * the `{success:false, message, error:{code, field}}` envelope for every error, the OpenAPI document
 * at /openapi.json and its reference page at /docs. `startMedia` listens on MEDIA_HOST:MEDIA_PORT.
 */

import { randomUUID } from 'node:crypto';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyReply,
  type RouteOptions,
} from 'fastify';
import { AccessLog } from '../lib/access-log.js';
import { isDatabaseUnavailable } from '../lib/errors.js';
import { closeWithin, httpServerOptions, listenError } from '../lib/http-server.js';
import { createLog } from '../lib/log.js';
import { sweepOrphanedTempFilesLater } from '../lib/temp-files.js';
import { apiReferenceOptions } from '../server/api-reference.js';
import { API_PREFIX, imageApiRoutes } from './apis/routes.js';
import { VideoCallbacks, type WebhookSettings } from './apis/video-callbacks.js';
import { videoApiRoutes } from './apis/video-routes.js';
import { type KeyAuthenticator, MediaAuth, resolveAuthMode } from './auth.js';
import type { MediaConfig } from './config.js';
import { LocalGenerator } from './generators/local.js';
import { VideoJobRunner } from './jobs/runner.js';
import type { VideoJobStore } from './jobs/store.js';
import { providerGenerators } from './providers/index.js';
import { GenerationQueue, QueueFullError, tenantOf } from './queue.js';
import { mediaRoutes } from './routes.js';
import { MediaService } from './service.js';
import { FilesystemStore } from './storage/filesystem.js';
import { type MediaBilling, MediaError, type MediaGenerator, type ObjectStore } from './types.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key's caller of a request that needs one (`needsCredential`, `GATEHOUSE_MEDIA_AUTH=keys`), else null. */
    mediaCaller: Caller | null;
  }
}

import { mediaWebPage } from './web.js';

export interface MediaAppOptions {
  config: MediaConfig;
  /** Generators by provider slug; `local` defaults to the built-in LocalGenerator. */
  generators?: Record<string, MediaGenerator>;
  /** One generator for every provider the routes name (tests). */
  generator?: MediaGenerator;
  /** Defaults to the filesystem store under `config.storeDir`. */
  store?: ObjectStore;
  /** Charges priced routes to API-key callers (`serve` passes the gateway's). */
  billing?: MediaBilling | null;
  /** A logger to use, or false for none; default: pino at `config.logLevel`. */
  log?: FastifyBaseLogger | false;
  /** The gateway's API keys (KeysService), for GATEHOUSE_MEDIA_AUTH=keys; given → `keys` is the default mode. */
  keys?: KeyAuthenticator | null;
  /** The video API's jobs in the gateway's database (`keys` mode); null → the video API is not served. */
  videoJobs?: VideoJobStore | null;
  /** How often a running video job's heartbeat is refreshed (tests shorten it). */
  videoHeartbeatMs?: number;
  /** Workspaces' default callback URLs and signing secrets (the gateway's database); null: none. */
  videoWebhooks?: WebhookSettings | null;
  /** Video job callbacks: a CA to trust besides the system's, and the retry delays (tests). */
  videoCallbacks?: { ca?: string; retryDelaysMs?: number[] };
  /** Sees every route as it is registered (the authorization matrix test enumerates them with it). */
  onRoute?: (route: RouteOptions) => void;
}

/**
 * Whether a route takes the caller's credential (GATEHOUSE_MEDIA_AUTH): the generations
 * (`POST /api/*`) and a video job's reads (its workspace's alone); the rest is public.
 */
export const needsCredential = (method: string, url: string | undefined): boolean =>
  url?.startsWith('/api/') === true && (method === 'POST' || url.startsWith('/api/v1/videos/:id'));

/** Codes of the requests Node refuses before routing (see httpServerOptions). */
const CLIENT_ERROR_CODES: Record<number, string> = {
  408: 'request_timeout',
  431: 'headers_too_large',
};

export function sendMediaError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  field?: string,
): FastifyReply {
  // The client APIs' routes (/api/v1/…) answer OpenRouter's envelope, the code and field as its metadata.
  const body = reply.request.url.startsWith(API_PREFIX)
    ? { error: { code: status, message, metadata: { error_code: code, ...(field ? { field } : {}) } } }
    : { success: false, message, error: field ? { code, field } : { code } };
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** Builds the media app (not listening). */
export async function buildMediaApp(opts: MediaAppOptions) {
  const { config } = opts;
  const generators: Record<string, MediaGenerator> = opts.generator
    ? Object.fromEntries(config.routes.map((r) => [r.provider, opts.generator as MediaGenerator]))
    : {
        local: new LocalGenerator(),
        ...providerGenerators(config.providers, { fetchPrivate: config.fetchPrivate }),
        ...opts.generators,
      };
  // The S3 client (~25 MB of RSS) is loaded only when the S3 store is configured.
  const s3 =
    !opts.store && config.store === 's3' && config.s3
      ? new (await import('./storage/s3.js')).S3Store(config.s3)
      : null;
  const store =
    opts.store ??
    s3 ??
    new FilesystemStore(config.storeDir, config.publicUrl ?? `http://localhost:${config.port}`);
  const service = new MediaService(generators, store, config.timeoutMs, opts.billing ?? null);
  const queue = new GenerationQueue(
    config.concurrency,
    config.queue,
    () => service.status().median_generation_ms,
    { perTenant: config.queuePerOrganization },
  );
  service.queue = queue;
  const auth = new MediaAuth(resolveAuthMode(config, opts.keys ?? null), {
    token: config.token,
    keys: opts.keys ?? null,
  });
  service.checkRoutes(config.routes);

  const app = Fastify({
    ...(opts.log === false
      ? { logger: false }
      : opts.log
        ? { loggerInstance: opts.log }
        : {
            // Gatehouse's logger: its redaction and URL serializer (no credentials in query strings logged).
            loggerInstance: createLog({
              level: config.logLevel,
              base: { process: 'media' },
            }) as FastifyBaseLogger,
          }),
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    // One access line per request instead of Fastify's two.
    logController: new AccessLog(),
    return503OnClosing: true,
    // Slow or stalled clients get a 408 in the media envelope (code request_timeout, …).
    ...httpServerOptions(config.http, (status, message) => ({
      success: false,
      message,
      error: { code: CLIENT_ERROR_CODES[status] ?? 'invalid_request' },
    })),
    // Malformed percent-encoding or an over-long path parameter, raised before routing.
    frameworkErrors: (err, _req, reply) =>
      sendMediaError(
        reply,
        err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400,
        'invalid_url',
        err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long' : 'The URL is not valid',
      ),
  });
  if (opts.onRoute) app.addHook('onRoute', opts.onRoute);
  // JSON or multipart only; text/plain (a Fastify default) is a 415 like any other type.
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof QueueFullError) reply.header('retry-after', String(err.retryAfterS));
    if (err instanceof MediaError) {
      if (err.status >= 500) req.log.warn({ code: err.code, msg: err.message }, 'generation failed');
      return sendMediaError(reply, err.status, err.code, err.message, err.field);
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return sendMediaError(
        reply,
        415,
        'unsupported_media_type',
        'Send application/json or multipart/form-data',
      );
    if (err.statusCode === 413)
      return sendMediaError(
        reply,
        413,
        'payload_too_large',
        `The request body is too large (${err.message})`,
      );
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
      return sendMediaError(reply, 400, 'invalid_body', err.message);
    // The shared database away (key authentication, billing): a 503 to retry, as on the gateway.
    if (isDatabaseUnavailable(err)) {
      req.log.warn({ err: { message: err.message, code: err.code } }, 'database unavailable');
      reply.header('retry-after', '1');
      return sendMediaError(reply, 503, 'database_unavailable', 'The database is unavailable; retry shortly');
    }
    req.log.error({ err }, 'media request failed');
    return sendMediaError(reply, 500, 'internal_error', 'Internal server error');
  });
  app.setNotFoundHandler((req, reply) =>
    sendMediaError(reply, 404, 'not_found', `No route ${req.method} ${req.url.split('?')[0]}`),
  );
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  // Requests that need a credential (needsCredential): authenticated, and generations refused at once when the queue is full — both before
  // the body (perhaps a large upload) is read.
  app.decorateRequest('mediaCaller', null);
  app.addHook('onRequest', async (req) => {
    // The matched route, not the raw URL (which may be percent-encoded: /%61pi/… routes to /api/…).
    if (!needsCredential(req.method, req.routeOptions.url)) return;
    req.mediaCaller = await auth.check(req.headers.authorization);
    if (req.method === 'POST' && queue.isFull(tenantOf(req.mediaCaller)))
      throw new QueueFullError(queue.retryAfterS());
  });
  if (s3) app.addHook('onClose', async () => s3.destroy());
  if (opts.log !== false) {
    app.log.info(
      {
        auth: auth.mode,
        concurrency: config.concurrency,
        queue: config.queue,
        queue_per_organization: config.queuePerOrganization || 'fair share',
        ...(s3 ? s3.describe() : opts.store ? { store: 'custom' } : { store: 'filesystem' }),
      },
      'media service configured',
    );
    if (auth.mode === 'none' && config.auth === null)
      app.log.warn('media service is open (GATEHOUSE_MEDIA_AUTH unset): run it on a trusted network only');
  }

  await app.register(multipart, { throwFileSizeLimit: false });
  // The generation routes (POST /api/*) and video jobs need the bearer credential unless the service is open.
  const guarded = auth.mode !== 'none';
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gatehouse media API',
        version: '1.0.0',
        description:
          'Image and video generation. Every route takes `prompt`; other parameters per route. Outputs are stored and returned as `{url, key}`.',
      },
      // The public URL when configured, else relative: the host the document was fetched from.
      servers: [{ url: config.publicUrl ?? '/', description: 'This media service' }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              auth.mode === 'keys'
                ? 'A Gatehouse API key: `Authorization: Bearer <key>`'
                : auth.mode === 'token'
                  ? "The service's token (GATEHOUSE_MEDIA_TOKEN): `Authorization: Bearer <token>`"
                  : 'Not required: this service runs without authentication (GATEHOUSE_MEDIA_AUTH=none)',
          },
        },
      },
    },
    transform: ({ schema, url, route }) => ({
      schema:
        guarded && needsCredential(String(route.method), url)
          ? { ...schema, security: [{ bearer: [] }] }
          : schema,
      url,
    }),
  });
  await app.register(scalar, apiReferenceOptions('/openapi.json', 'Gatehouse media API reference'));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await mediaRoutes(app, {
    config,
    service,
    files: store instanceof FilesystemStore ? store : null,
  });
  await imageApiRoutes(app, { config, service });
  // Video jobs need the gateway's database (and a key's workspace to belong to): `keys` mode only.
  const jobStore = opts.videoJobs && auth.mode === 'keys' ? opts.videoJobs : null;
  const callbacks = jobStore
    ? new VideoCallbacks(app.log, jobStore, opts.videoWebhooks ?? null, {
        allowPrivate: config.fetchPrivate,
        timeoutMs: config.fetchTimeoutMs,
        ...opts.videoCallbacks,
      })
    : null;
  const jobs =
    jobStore && callbacks
      ? new VideoJobRunner(jobStore, app.log, {
          graceMs: config.shutdownGraceMs,
          heartbeatMs: opts.videoHeartbeatMs,
          // A job's end, however it came, goes to its callback.
          onEnded: (id) => callbacks.ended(id),
        })
      : null;
  if (jobs)
    app.addHook('onClose', async () => {
      await jobs.close();
      await callbacks?.close();
    });
  await videoApiRoutes(app, { config, service, store, jobs, webhooks: opts.videoWebhooks ?? null });
  await mediaWebPage(app, { config });
  return { app, service, store, auth };
}

export interface MediaHandle {
  app: Awaited<ReturnType<typeof buildMediaApp>>['app'];
  service: MediaService;
  /** The listening base URL (loopback form). */
  url: string;
  close(): Promise<void>;
}

/** Builds the media app and listens on `config.host:config.port`. */
export async function startMedia(
  config: MediaConfig,
  opts: Omit<MediaAppOptions, 'config'> = {},
): Promise<MediaHandle> {
  const { app, service, store } = await buildMediaApp({ ...opts, config });
  const address = await app.listen({ port: config.port, host: config.host }).catch(async (err) => {
    await app.close();
    throw listenError(err, 'MEDIA_PORT', config.host, config.port);
  });
  sweepOrphanedTempFilesLater(app.log);
  const port = new URL(address.replace('[::1]', '127.0.0.1').replace('[::]', '127.0.0.1')).port;
  if (!config.publicUrl && store instanceof FilesystemStore) store.setPublicUrl(`http://localhost:${port}`);
  // Video jobs and generations in flight get the shutdown grace (the runner waits as long).
  return {
    app,
    service,
    url: `http://127.0.0.1:${port}`,
    close: () => closeWithin(app, config.shutdownGraceMs, 100),
  };
}
