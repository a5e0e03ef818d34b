import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, databaseUnavailable, isDatabaseUnavailable } from '../lib/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../lib/json-depth.js';

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
    .send(rendererOf(reply.request)({ status, message, metadata, code }, reply.request));
}

/** The route's own error format (`config.renderError`), else the standard envelope. */
const rendererOf = (request: FastifyRequest): ErrorRenderer =>
  request.routeOptions?.config?.renderError ?? envelope;

/**
 * Errors Fastify raises before routing — a malformed percent-encoding (400), a path parameter over
 * `maxParamLength` (414) — which bypass the error handler and would otherwise leave in Fastify's own
 * body. The path is not quoted back.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
  const message =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is too long'
      : err.code === 'FST_ERR_BAD_URL'
        ? 'The URL is not valid (malformed percent-encoding)'
        : reasons[status] || 'Bad request';
  sendError(reply, status, message);
}

/** An error as what an answer says of it, in whichever format the route answers errors. */
export interface ErrorParts {
  status: number;
  message: string;
  metadata?: Record<string, unknown>;
  /** A named code (interns API) sent as `error.code` instead of the status. */
  code?: string;
}

/** Renders an error in a route's own format (the standard envelope unless the route says otherwise). */
export type ErrorRenderer = (parts: ErrorParts, request: FastifyRequest) => unknown;

/** The standard envelope `{error:{code,message,metadata?}}`. */
export const envelope: ErrorRenderer = ({ status, message, metadata, code }) => ({
  error: { code: code ?? status, message, ...(metadata ? { metadata } : {}) },
});

/**
 * What an error becomes: domain errors as they are, the database away as 503, Fastify's
 * validation/parse/limit errors as their 4xx, anything else a 500 (logged with the request id,
 * answered without details).
 */
function errorParts(err: FastifyError, request: FastifyRequest): ErrorParts {
  if (err instanceof ApiError) {
    return { status: err.status, message: err.message, metadata: err.metadata, code: err.code };
  }
  // The database restarting or unreachable is a 503 to retry, not an internal error.
  if (isDatabaseUnavailable(err)) {
    request.log.warn({ err: { message: err.message, code: err.code } }, 'database unavailable');
    const e = databaseUnavailable();
    return { status: e.status, message: e.message, metadata: e.metadata };
  }
  if (err.validation) {
    const where = err.validationContext ?? 'request';
    return { status: 400, message: `Invalid ${where}: ${err.message}` };
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Fastify's own client errors (invalid JSON, empty body, 413, 415 …) carry safe messages; a
    // body over the route's limit is told that limit when the route says it.
    const tooLarge =
      (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && request.routeOptions.config?.tooLarge) ||
      'Request body is too large';
    return { status, message: status === 413 ? tooLarge : err.message || reasons[status] || 'Error' };
  }
  request.log.error({ err }, 'unhandled error');
  return { status: 500, message: 'Internal server error', metadata: { request_id: request.id } };
}

/**
 * The error handler: answers in the route's error format (Retry-After from
 * `metadata.retry_after_ms`).
 */
function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const parts = errorParts(err, request);
  const retryMs = parts.metadata?.retry_after_ms;
  if (typeof retryMs === 'number')
    reply.header('retry-after', String(Math.max(1, Math.ceil(retryMs / 1000))));
  return reply
    .code(parts.status)
    .type('application/json; charset=utf-8')
    .send(rendererOf(request)(parts, request));
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The body is passed on to a model as sent, so its strings are not checked for NUL characters. */
    verbatim?: boolean;
    /** Errors of the route in its callers' own format (the standard envelope when absent). */
    renderError?: ErrorRenderer;
    /** What a body over the route's limit is told (413): the limit and the setting that makes it. */
    tooLarge?: string;
  }
}

/**
 * Whether a parsed JSON value holds U+0000 in a string or a key. PostgreSQL text cannot store it
 * (an error, a 500), so the management plane refuses it on both databases alike.
 */
function hasNul(v: unknown, depth = 0): boolean {
  if (typeof v === 'string') return v.includes('\u0000');
  if (v === null || typeof v !== 'object' || depth > 64) return false;
  // Only what JSON parsing makes (a streamed body is left to its route).
  const proto = Object.getPrototypeOf(v);
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return false;
  for (const [k, x] of Object.entries(v)) if (k.includes('\u0000') || hasNul(x, depth + 1)) return true;
  return false;
}

/** Turns a route pattern (`/api/v1/keys/:hash`) into a regex over concrete paths. */
const patternToRegex = (url: string) =>
  new RegExp(
    `^${url
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[^/]+/g, '[^/]+')
      .replace(/\*/g, '.*')}/?$`,
  );

/** Validated input the database would fail on, as the 400 that refuses it (null: fine). */
function inputRefusal(request: FastifyRequest): ApiError | null {
  for (const [part, values] of [
    ['querystring', request.query],
    ['params', request.params],
  ] as const) {
    if (values === null || typeof values !== 'object') continue;
    for (const name in values as Record<string, unknown>) {
      const v = (values as Record<string, unknown>)[name];
      // Ajv coerces `Infinity` or `1e400` to Infinity, which passes `integer` and skips
      // minimum/maximum (both check finite numbers only); SQLite refuses it as an OFFSET.
      if ([v].flat().some((x) => typeof x === 'number' && !Number.isFinite(x)))
        return new ApiError(400, `Invalid ${part}: ${name} must be a finite number`);
      if (hasNul(v)) return new ApiError(400, `Invalid ${part}: ${name} contains a NUL character`);
    }
  }
  if (nestsDeeperThan(request.body))
    return new ApiError(400, `Invalid body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (!request.routeOptions.config?.verbatim && hasNul(request.body))
    return new ApiError(400, 'Invalid body: strings must not contain NUL characters (U+0000)');
  return null;
}

/**
 * Every error leaves in the standard envelope `{error:{code,message}}` as application/json:
 * domain errors, Fastify's validation/parse/limit errors, unknown routes (404), known paths with a
 * wrong method (405 + Allow) and unexpected exceptions (500, logged with the request id, no stack).
 */
export function installErrorHandling(app: FastifyInstance): void {
  // Validated input the database would fail on (a 500), refused as a 400 before the handler runs.
  // Callback style (an async hook costs a promise on every request).
  app.addHook('preHandler', (request, _reply, done) => {
    done(inputRefusal(request) ?? undefined);
  });

  const routes: { regex: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (r) => {
    const methods = (Array.isArray(r.method) ? r.method : [r.method]).filter((m) => m !== 'HEAD');
    routes.push({ regex: patternToRegex(r.url), methods });
  });

  app.setErrorHandler(handleError);

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
