import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import scalar from '@scalar/fastify-api-reference';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyBaseLogger, type RouteOptions } from 'fastify';
import { adminRoutes } from './accounts/admin.routes.js';
import { AdminThrottle } from './accounts/admin.throttle.js';
import { installAuth } from './accounts/http-auth.js';
import { keysRoutes } from './accounts/keys.routes.js';
import { authRoutes, oidcBrowserRoutes } from './accounts/oidc.routes.js';
import { organizationsRoutes } from './accounts/organizations.routes.js';
import { workspacesRoutes } from './accounts/workspaces.routes.js';
import { activityRoutes } from './activity/routes.js';
import { installAudit } from './audit/hook.js';
import { auditRoutes } from './audit/routes.js';
import { messageBatchesRoutes } from './batches/anthropic-routes.js';
import { batchesRoutes } from './batches/routes.js';
import { byokRoutes } from './byok/routes.js';
import { catalogRoutes } from './catalog/routes.js';
import { workerIndex } from './cluster/ipc.js';
import { contentLogRoutes } from './content-log/routes.js';
import { budgetsRoutes } from './credits/budgets.routes.js';
import { creditsRoutes } from './credits/routes.js';
import { ping } from './db/connection.js';
import { feedbackRoutes } from './feedback/routes.js';
import { filesRoutes } from './files/routes.js';
import { guardrailAssignmentsRoutes } from './guardrails/assignments.routes.js';
import { effectivePolicyRoutes } from './guardrails/effective.routes.js';
import { guardrailsRoutes } from './guardrails/routes.js';
import { audioRoutes } from './inference/audio.routes.js';
import { inferenceRoutes } from './inference/routes.js';
import { responsesSocketRoutes } from './inference/socket.routes.js';
import { runtimeCallbackRoutes } from './interns/callback.routes.js';
import { internChatRoutes } from './interns/chat.routes.js';
import { installInternHostProxy } from './interns/host-proxy.js';
import { internsRoutes } from './interns/routes.js';
import { AccessLog } from './lib/access-log.js';
import { httpServerOptions } from './lib/http-server.js';
import type { Log } from './lib/log.js';
import { mediaForwardRoutes } from './media/forward.routes.js';
import { observabilityRoutes } from './observability/routes.js';
import { presetsRoutes } from './presets/routes.js';
import { credentialRoutes } from './routing/credentials/routes.js';
import { apiReferenceOptions } from './server/api-reference.js';
import { installConsole } from './server/console.js';
import { frameworkErrors, installErrorHandling, sendError } from './server/errors.js';
import { installJsonBodies } from './server/json-bodies.js';
import { landingPage } from './server/landing.js';
import { installMetrics } from './server/metrics.js';
import { documentedSchema } from './server/openapi-only.js';
import type { Router } from './server/router.js';
import { ErrorBody } from './server/schemas.js';
import { installWebsocket } from './server/websocket.js';
import type { Services } from './services.js';
import { conversationRoutes } from './stored-responses/conversation-routes.js';
import { storedResponsesRoutes } from './stored-responses/routes.js';
import { vaultRoutes } from './vault/routes.js';

export const API_PREFIX = '/api/v1';

/**
 * Every route plugin under /api/v1, in one list so a new domain is one line. Each module's second
 * parameter names the services it uses (`Pick<Services, …>` or its own deps interface); all are
 * handed `services`, which that type narrows to what the module may touch.
 */
const apiRoutes: ((app: Router, services: Services) => Promise<void>)[] = [
  guardrailsRoutes,
  guardrailAssignmentsRoutes,
  effectivePolicyRoutes,
  keysRoutes,
  workspacesRoutes,
  organizationsRoutes,
  byokRoutes,
  creditsRoutes,
  budgetsRoutes,
  adminRoutes,
  credentialRoutes,
  inferenceRoutes,
  audioRoutes,
  responsesSocketRoutes,
  contentLogRoutes,
  feedbackRoutes,
  catalogRoutes,
  storedResponsesRoutes,
  presetsRoutes,
  conversationRoutes,
  batchesRoutes,
  filesRoutes,
  messageBatchesRoutes,
  internsRoutes,
  internChatRoutes,
  vaultRoutes,
  activityRoutes,
  observabilityRoutes,
  auditRoutes,
  authRoutes,
];

export interface AppOptions {
  /** The process's logger (created first, shared with the services). */
  log: Log;
  /** Sees every route as it is registered (the authorization matrix test enumerates them with it). */
  onRoute?: (route: RouteOptions) => void;
}

/** Builds the gateway's HTTP app (not listening). */
export async function buildApp(services: Services, opts: AppOptions) {
  const { config } = services;
  // Typed as Fastify's logger interface, which pino's satisfies (else Fastify infers pino's type).
  const loggerInstance: FastifyBaseLogger = opts.log;
  const app = Fastify({
    loggerInstance,
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    // One access line per request instead of Fastify's two.
    logController: new AccessLog(),
    return503OnClosing: true,
    frameworkErrors,
    // Slow or stalled clients (slow loris, slow bodies) get a 408 in the standard envelope.
    ...httpServerOptions(config.http, (status, message) => ({ error: { code: status, message } })),
    // Vault secret names may be 255 characters long (the default limit is 100: 414 beyond).
    routerOptions: { maxParamLength: 256 },
  }).withTypeProvider<TypeBoxTypeProvider>();
  if (opts.onRoute) app.addHook('onRoute', opts.onRoute);

  installErrorHandling(app);
  // The one socket route is the Responses WebSocket mode: its messages are model calls' bodies.
  await installWebsocket(app, config.inferenceBodyLimit);
  // Callback-style hooks on every request: an async hook costs a promise per request.
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-request-id', req.id);
    done(null, payload);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Gatehouse API',
        version: '1.0.0',
        description: 'Self-hosted model gateway: management, inference, batches and interns.',
      },
      servers: [{ url: API_PREFIX }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // Components are named by their $id (ApiKey, Guardrail …) instead of def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    // Paths in the document are relative to the server URL (/api/v1), as the clients see them.
    transform: ({ schema, url, route }) => ({
      schema: documentedSchema(schema, route.config),
      url: url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) : url,
    }),
  });
  await app.register(scalar, apiReferenceOptions(`${API_PREFIX}/openapi.json`, 'Gatehouse API reference'));
  app.addSchema(ErrorBody);

  installInternHostProxy(app, services);
  installMetrics(app, services.metrics);
  installAuth(
    app,
    services.keys,
    services.roles,
    config.adminToken,
    new AdminThrottle(config.adminAuthFailures, 60, workerIndex() !== null),
  );
  installAudit(app, services.audit);

  landingPage(app, config.mediaUrl);
  const status = Type.Object({ status: Type.String() });
  app.get('/health', { schema: { hide: true, response: { 200: status } } }, async () => ({ status: 'ok' }));
  app.get('/ready', { schema: { hide: true } }, async (req, reply) => {
    try {
      await ping(services.db);
      return { status: 'ready' };
    } catch (err) {
      req.log.warn({ err }, 'readiness check failed');
      return sendError(reply, 503, 'Database unreachable');
    }
  });

  await installConsole(app, config.env.GATEHOUSE_CONSOLE_DIR);
  await app.register(async (browser) => oidcBrowserRoutes(browser, services));
  await app.register(async (internal) => runtimeCallbackRoutes(internal, services));
  // Image generation, forwarded to the media service with its body unparsed.
  await app.register(async (media) => mediaForwardRoutes(media, services.mediaLink, config.publicUrl), {
    prefix: API_PREFIX,
  });
  await app.register(
    async (api) => {
      installJsonBodies(api);
      for (const routes of apiRoutes) await routes(api, services);
      api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    },
    { prefix: API_PREFIX },
  );
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
