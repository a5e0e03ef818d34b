import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../lib/errors.js';

const reasons = {
  400: 'Bad request',
  401: 'Missing or invalid authentication credentials',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  408: 'Request timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Request body is too large',
  415: 'Unsupported media type',
  429: 'Too many requests',
  500: 'Internal server error',
  503: 'Service unavailable',
} as Record<number, string | undefined>;

export function sendError(
  reply: FastifyReply,
  status: number,
  message: string,
  metadata?: Record<string, unknown>,
  code?: string,
): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ error: { code: code ?? status, message, ...(metadata ? { metadata } : {}) } });
}

/** Turns a route pattern (`/api/v1/keys/:hash`) into a regex over concrete paths. */
const patternToRegex = (url: string) =>
  new RegExp(
    `^${url
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[^/]+/g, '[^/]+')
      .replace(/\*/g, '.*')}/?$`,
  );

/**
 * Every error leaves in the standard envelope `{error:{code,message}}` as application/json:
 * domain errors, Fastify's validation/parse/limit errors, unknown routes (404), known paths with a
 * wrong method (405 + Allow) and unexpected exceptions (500, logged with the request id, no stack).
 */
export function installErrorHandling(app: FastifyInstance): void {
  const routes: { regex: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (r) => {
    const methods = (Array.isArray(r.method) ? r.method : [r.method]).filter((m) => m !== 'HEAD');
    routes.push({ regex: patternToRegex(r.url), methods });
  });

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof ApiError) {
      const retryMs = err.metadata?.retry_after_ms;
      if (typeof retryMs === 'number')
        reply.header('retry-after', String(Math.max(1, Math.ceil(retryMs / 1000))));
      return sendError(reply, err.status, err.message, err.metadata, err.code);
    }
    if (err.validation) {
      const where = err.validationContext ?? 'request';
      return sendError(reply, 400, `Invalid ${where}: ${err.message}`);
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's own client errors (invalid JSON, empty body, 413, 415 …) carry safe messages.
      return sendError(
        reply,
        status,
        status === 413 ? 'Request body is too large' : err.message || reasons[status] || 'Error',
      );
    }
    request.log.error({ err }, 'unhandled error');
    return sendError(reply, 500, 'Internal server error', { request_id: request.id });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = new Set(routes.filter((r) => r.regex.test(path)).flatMap((r) => r.methods));
    if (allowed.size > 0) {
      reply.header('allow', [...allowed].join(', '));
      return sendError(reply, 405, `Method ${request.method} is not allowed on ${path}`);
    }
    return sendError(reply, 404, `Route ${request.method} ${path} not found`);
  });
}
