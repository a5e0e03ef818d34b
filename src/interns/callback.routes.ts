import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { callController } from '../inference/stream.js';
import { WIRES } from '../inference/wires/index.js';
import type { InferenceCall } from '../routing/call.js';
import { parsePreferences } from '../routing/preferences.js';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import type { Services } from '../services.js';
import { annotate, requestTrace, serveTraced } from '../telemetry/spans.js';
import { sendEgress } from './egress.js';
import type { RunGrant } from './run-grants.js';
import { CALLBACK_PATHS, RUN_GRANT_HEADER } from './runtime-protocol.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on the runtime callback routes: the intern whose runtime token authenticated the call. */
    runtimeIntern: string;
  }
}

/** Transcripts grow with a run; the callbacks accept more than the public body limit. */
const CALLBACK_BODY_LIMIT = 16 * 1024 * 1024;
const AnyBody = Type.Object({}, { additionalProperties: true });

function bearer(request: FastifyRequest): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return m?.[1] ?? null;
}

/**
 * What the runtimes' callbacks use: the runtimes' tokens, the run grants, the vault for egress, and
 * the routing engine (with the database for the calling key) for model calls.
 */
export interface RuntimeCallbackDeps
  extends Pick<Services, 'provisioner' | 'interns' | 'vault' | 'db' | 'engine'> {
  config: Pick<Config, 'interns'>;
}

/**
 * The runtimes' callbacks (runtime-protocol.ts CALLBACK_PATHS), outside /api/v1. A runtime
 * authenticates with its own token (`Authorization: Bearer <token>`), which names its intern.
 * - chat: an OpenAI chat body run through the routing engine as the key whose chat request issued
 *   the run grant it carries (run-grants.ts), exactly as POST /api/v1/chat/completions runs it for
 *   that key (limits, guardrails, budgets, credits; usage and cost recorded against it), with the
 *   model forced to the one the intern was provisioned with. No valid grant, no model call;
 * - egress: the http_request tool's requests, with vault secrets filled in for their hosts (egress.ts).
 */
export async function runtimeCallbackRoutes(app: Router, services: RuntimeCallbackDeps): Promise<void> {
  if (!app.hasRequestDecorator('runtimeIntern')) app.decorateRequest('runtimeIntern', '');

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const token = bearer(request);
    const internId = token ? services.provisioner.internOfToken(token) : null;
    if (!internId) return sendError(reply, 401, 'Missing or invalid runtime token');
    request.runtimeIntern = internId;
  });

  app.post(
    CALLBACK_PATHS.chat,
    {
      config: { auth: 'none', verbatim: true },
      bodyLimit: CALLBACK_BODY_LIMIT,
      schema: { hide: true, body: AnyBody },
    },
    (request, reply) => {
      const internId = request.runtimeIntern;
      const token = request.headers[RUN_GRANT_HEADER];
      const grant = typeof token === 'string' ? services.interns.grants.lookup(token, internId) : null;
      // A model call of the run: traced under the run's request (the grant carries its context).
      return serveTraced(
        request,
        reply,
        CALLBACK_PATHS.chat,
        () => {
          annotate(requestTrace(request), () => ({ 'gen_ai.agent.id': internId }));
          return runCallback(services, request, reply, internId, grant);
        },
        grant?.trace,
      );
    },
  );

  app.post(
    CALLBACK_PATHS.egress,
    { config: { auth: 'none', verbatim: true }, schema: { hide: true, body: AnyBody } },
    async (request, reply) => {
      const internId = request.runtimeIntern;
      const controller = callController(reply);
      const secrets = await services.vault.secretsForIntern(internId);
      const result = await sendEgress(request.body, {
        secrets,
        allowPrivate: services.config.interns.egressPrivate,
        signal: controller.signal,
        log: request.log,
        internId,
      });
      return reply.code(result.status).send(result.body);
    },
  );
}

/** A runtime's model call, run as the key whose chat request issued `grant`. */
async function runCallback(
  services: RuntimeCallbackDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  internId: string,
  grant: RunGrant | null,
) {
  if (!grant) {
    return sendError(reply, 401, 'No valid run grant: model calls are made only for a chat request');
  }
  const caller = await services.interns.grantCaller(grant);
  if (!caller) {
    return sendError(reply, 401, 'The calling key is disabled or expired: the run cannot be billed');
  }
  const row = await services.db
    .selectFrom('interns')
    .select(['provisioned_model', 'model'])
    .where('id', '=', internId)
    .executeTakeFirst();
  if (!row) return sendError(reply, 401, 'The intern no longer exists');
  const model =
    row.provisioned_model ??
    services.provisioner.modelOf(internId) ??
    row.model ??
    services.config.interns.defaultModel;
  const body: Record<string, unknown> = {
    ...(request.body as Record<string, unknown>),
    model,
    stream: false,
  };
  const call: InferenceCall = {
    caller,
    wire: WIRES.chat,
    body,
    model,
    stream: false,
    headers: {},
    prefs: parsePreferences(body.provider),
    echoUpstream: false,
    signal: callController(reply).signal,
    trace: requestTrace(request),
  };
  const done = await services.engine.complete(call);
  if (done.lane) return reply.type('application/json').send(done.forwarded.text);
  return reply.send(WIRES.chat.encodeResponse(done, call));
}
