/**
 * `GET /responses` with a WebSocket upgrade: OpenAI's Responses WebSocket mode (the openai
 * client's `responses.connect()`, the Agents SDK's `OpenAIResponsesWSModel`, Codex with
 * `supports_websockets`). The handshake is authenticated as any API call is — a bad key is an
 * HTTP 401, never an open socket — and each `response.create` then runs as a streamed
 * `POST /responses` (socket-session.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import type { Services } from '../services.js';
import { socketMetrics } from './socket-metrics.js';
import { ResponsesSession, type SessionServices } from './socket-session.js';
import { WIRES } from './wires/index.js';

export async function responsesSocketRoutes(
  app: Router,
  services: SessionServices & Pick<Services, 'config' | 'metrics'>,
) {
  const wire = WIRES.responses;
  const sessions = new Set<ResponsesSession>();
  const { inferenceBodyLimit, shutdownGraceMs, websocketMaxAgeMs } = services.config;
  const metrics = socketMetrics(services.metrics);

  app.route({
    method: 'GET',
    url: wire.path,
    // Errors before the upgrade (a bad key: 401) in the /responses error format.
    config: { auth: 'api', renderError: wire.renderError, upgrade: true },
    // Not an HTTP operation: the upgrade is described on POST /responses in the API reference.
    schema: { hide: true },
    // The inference endpoints refuse management keys; here before the socket opens.
    preHandler: async (req: FastifyRequest, reply: FastifyReply) => {
      if (req.caller.isManagement)
        return sendError(reply, 403, 'Management keys cannot call inference endpoints; use an API key');
    },
    // A plain GET: this route only upgrades.
    handler: async (_req: FastifyRequest, reply: FastifyReply) => {
      reply.header('upgrade', 'websocket');
      return sendError(
        reply,
        426,
        'GET /responses is the Responses WebSocket mode: connect with a WebSocket',
      );
    },
    wsHandler: (socket, req) => {
      const session = new ResponsesSession(socket, req, services, metrics);
      sessions.add(session);
      metrics.opened();
      // A connection serves for a while, as OpenAI's (60 minutes): then it ends after its response.
      const limit = setTimeout(
        () =>
          session.closeWhenIdle(1000, 'connection limit reached', {
            status: 400,
            code: 'websocket_connection_limit_reached',
            message: `Responses websocket connection limit reached (${minutes(websocketMaxAgeMs)}). Create a new websocket connection to continue.`,
          }),
        websocketMaxAgeMs,
      );
      limit.unref();
      socket.on('close', () => {
        clearTimeout(limit);
        sessions.delete(session);
        metrics.closed();
      });
    },
  });

  // What Codex reads from the handshake: the largest message it may send (a model call's body limit).
  app.websocketServer.on('headers', (headers) => {
    headers.push(`x-codex-websocket-max-message-bytes: ${inferenceBodyLimit}`);
  });

  // Shutdown: idle sockets close now (1001, going away); one with a response in flight once it
  // is over, within the shutdown grace (then it is cut, and its call recorded as cancelled).
  app.addHook('preClose', async () => {
    if (sessions.size === 0) return;
    const closed = [...sessions].map(
      (s) =>
        new Promise<void>((resolve) => {
          s.onClosed(resolve);
          s.closeWhenIdle(1001, 'server shutting down');
        }),
    );
    const cut = setTimeout(() => {
      for (const s of sessions) s.terminate();
    }, shutdownGraceMs);
    try {
      await Promise.all(closed);
    } finally {
      clearTimeout(cut);
    }
  });
}

const minutes = (ms: number) =>
  ms % 60_000 === 0 ? `${ms / 60_000} minutes` : `${Math.round(ms / 1000) || 1} seconds`;
