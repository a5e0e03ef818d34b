import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forwardedHeaders } from '../inference/wires/wire.js';
import { ApiError, forbidden } from '../lib/errors.js';
import type { Router } from '../server/router.js';
import { errors, IdParams, Nullable, PageQuery, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { BATCH_FORWARD_HEADERS } from './execute.js';
import { Batch, BatchResultItem, BatchSubmit, BatchUsage, ResultsQuery } from './schemas.js';
import { DEFAULT_RESULTS_PAGE } from './service.js';

const tags = ['Batches'];

/** How long the rest of a refused batch body may keep arriving before its connection is closed. */
const REFUSED_BODY_LINGER_MS = 2_000;

/**
 * After a refusal mid-body the error goes out on a connection left open (not `connection: close`,
 * which closes it at once and resets it under a client still sending, so the client sees EPIPE or
 * ECONNRESET instead of the error). The rest of the body is read and dropped, so the connection
 * serves the client's next request (a request left paused mid-body would hold the connection until
 * it is closed, resetting whatever the client sent next on it); a body that has not ended
 * REFUSED_BODY_LINGER_MS later gets its connection closed.
 */
export function lingerThenClose(req: IncomingMessage, res: ServerResponse): void {
  const socket = res.socket;
  if (!socket) return;
  const timer = setTimeout(() => {
    if (!req.complete) socket.destroy();
  }, REFUSED_BODY_LINGER_MS);
  timer.unref();
  // On the request, not the socket: a keep-alive socket would collect one listener per refusal.
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** Batches are for API keys: management keys get 403 (as on the inference endpoints). */
function apiCaller(req: FastifyRequest) {
  if (req.caller.isManagement) throw forbidden('Management keys cannot use batches; use an API key');
  return req.caller;
}

export async function batchesRoutes(app: Router, { batches }: Pick<Services, 'batches'>) {
  app.addSchema(BatchUsage);
  app.addSchema(BatchResultItem);
  app.addSchema(Batch);
  app.addSchema(BatchSubmit);
  const BatchRef = Type.Ref(Batch);

  // Creation reads its body as a stream (up to 200 MB), so it lives in a scope whose JSON parser
  // hands the raw request stream to the handler instead of buffering and parsing it.
  await app.register(async (scope) => {
    scope.removeContentTypeParser(['application/json']);
    scope.addContentTypeParser('application/json', (_req, payload, done) => done(null, payload));
    scope.post(
      '/batches',
      {
        config: { auth: 'api' },
        schema: {
          tags,
          summary: 'Create a batch (streamed body up to 200 MB); 202 with the batch in validating',
          description:
            'Body: BatchSubmit. Requests are validated as they arrive; the first invalid one is a 400 naming its index and custom_id. Every request runs with the provider headers of this call that its endpoint passes on (`anthropic-beta`, `anthropic-version`, `openai-beta`, …).',
          response: { 202: BatchRef, ...errors(400, 401, 402, 403, 413, 415, 429, 500) },
        },
      },
      async (req, reply) => {
        const length = req.headers['content-length'];
        const declared = length === undefined ? null : Number(length);
        // Other content types are parsed by Fastify's default parsers into strings, not streams.
        if (!(req.body instanceof Readable))
          throw new ApiError(415, 'The batch body must be JSON, sent with Content-Type: application/json');
        try {
          // The ingester may stop early (a refusal): the request must then stay readable for
          // lingerThenClose, not be destroyed with its connection as for-await's early exit would.
          const body = req.body.iterator({ destroyOnReturn: false });
          // The provider headers of this call (`anthropic-beta`, `anthropic-version`, `openai-beta`,
          // …): each request runs as its endpoint would run it carrying them — stored with the batch.
          const batch = await batches.create(apiCaller(req), body, declared, {
            headers: forwardedHeaders(req.headers, BATCH_FORWARD_HEADERS),
          });
          return reply.code(202).send(batch);
        } catch (err) {
          // Refused before the body was read to its end: see lingerThenClose.
          if (!req.raw.complete) lingerThenClose(req.raw, reply.raw);
          throw err;
        }
      },
    );
  });

  app.get(
    '/batches',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: "This key's batches, newest first (without results)",
        querystring: Type.Object({
          ...PageQuery.properties,
          after: Type.Optional(
            Type.String({
              description: "A batch id: the page starts after it (OpenAI's cursor; offset is then ignored)",
            }),
          ),
        }),
        response: {
          200: Type.Object({
            object: Type.Literal('list'),
            data: Type.Array(BatchRef),
            total_count: Type.Integer(),
            has_more: Type.Boolean(),
            first_id: Nullable(Type.String()),
            last_id: Nullable(Type.String()),
          }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) => {
      const page = toPage(req.query);
      return batches.list(apiCaller(req), page.offset, page.limit, req.query.after);
    },
  );

  app.get(
    '/batches/:id',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'A batch with its progress, usage and a page of results',
        params: IdParams,
        querystring: ResultsQuery,
        response: { 200: BatchRef, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) =>
      batches.get(apiCaller(req), req.params.id, {
        offset: req.query.results_offset ?? 0,
        limit: req.query.results_limit ?? DEFAULT_RESULTS_PAGE,
      }),
  );

  app.get(
    '/batches/:id/results',
    {
      config: {
        auth: 'api',
        // A stream of lines: documented, not serialized.
        openapi: {
          response: {
            200: {
              description:
                'One JSON object per line: `{id, custom_id, response: {status_code, request_id, body} | null, error}`',
              content: { 'application/jsonl': { schema: Type.String() } },
            },
          },
        },
      },
      schema: {
        tags,
        summary: 'Every finished result as JSON Lines (application/jsonl), in request order',
        description: '410 once the results expired with the output files (`output_expires_after`).',
        params: IdParams,
        response: errors(401, 403, 404, 410, 500),
      },
    },
    async (req, reply) => {
      const lines = await batches.resultsJsonl(apiCaller(req), req.params.id);
      reply
        .type('application/jsonl; charset=utf-8')
        .header('content-disposition', `attachment; filename="${req.params.id}_results.jsonl"`);
      return reply.send(Readable.from(lines));
    },
  );

  app.post(
    '/batches/:id/cancel',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'Cancel a batch: cancelling, then cancelled once running requests finish',
        params: IdParams,
        response: { 200: BatchRef, ...errors(401, 403, 404, 409, 500) },
      },
    },
    async (req) => batches.cancel(apiCaller(req), req.params.id),
  );
}
