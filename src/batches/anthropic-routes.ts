import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { WIRES } from '../inference/wires/index.js';
import { forwardedHeaders } from '../inference/wires/wire.js';
import { ApiError } from '../lib/errors.js';
import { publicOrigin } from '../server/public-base.js';
import type { Router } from '../server/router.js';
import { IdParams } from '../server/schemas.js';
import type { Services } from '../services.js';
import {
  MessageBatch,
  MessageBatchCreate,
  MessageBatchDeleted,
  MessageBatchList,
  MessageBatchListQuery,
} from './anthropic-schemas.js';
import type { ResultsUrl } from './anthropic-service.js';
import { lingerThenClose } from './routes.js';

const tags = ['Message Batches'];
const { renderError, errorSchema } = WIRES.messages;
/** Errors in Anthropic's error object, as on `/messages`. */
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, errorSchema]));
const config = { auth: 'api' as const, renderError };

/**
 * Where the client reaches this gateway's results file: the SDK's `results()` fetches `results_url`
 * as it is, so it must be absolute (server/public-base.ts).
 */
export function resultsUrl(req: FastifyRequest, publicUrl: string | null): ResultsUrl {
  // The route's own prefix (/api/v1), so the URL follows wherever the API is mounted.
  const route = req.routeOptions.url ?? '';
  const path = `${route.slice(0, route.indexOf('/messages/batches'))}/messages/batches`;
  const origin = publicOrigin(req, publicUrl);
  return (id) => `${origin}${path}/${id}/results`;
}

/** Anthropic's Message Batches API (`client.messages.batches`) over Gatehouse's batches. */
export async function messageBatchesRoutes(
  app: Router,
  { messageBatches, config: settings }: Pick<Services, 'messageBatches' | 'config'>,
) {
  app.addSchema(MessageBatch);
  app.addSchema(MessageBatchCreate);
  const Ref = Type.Ref(MessageBatch);

  // Creation reads its body as a stream, as POST /batches does (see routes.ts).
  await app.register(async (scope) => {
    scope.removeContentTypeParser(['application/json']);
    scope.addContentTypeParser('application/json', (_req, payload, done) => done(null, payload));
    scope.post(
      '/messages/batches',
      {
        config: { ...config, openapi: { body: Type.Ref(MessageBatchCreate) } },
        schema: {
          tags,
          summary: 'Create a message batch (Anthropic format): the batch in_progress',
          description:
            'Every request runs as `POST /messages` would run it, with the `anthropic-beta` and `anthropic-version` headers of this call; requests may use different models.',
          response: { 200: Ref, ...errors(400, 401, 402, 403, 413, 415, 429, 500) },
        },
      },
      async (req, reply) => {
        const length = req.headers['content-length'];
        if (!(req.body instanceof Readable))
          throw new ApiError(415, 'The batch body must be JSON, sent with Content-Type: application/json');
        try {
          const body = req.body.iterator({ destroyOnReturn: false });
          return await messageBatches.create(
            req.caller,
            body,
            length === undefined ? null : Number(length),
            resultsUrl(req, settings.publicUrl),
            // `anthropic-beta` (and `anthropic-version`): each request runs as `POST /messages`
            // carrying them would, through the same allow-list.
            forwardedHeaders(req.headers, WIRES.messages.forwardHeaders),
          );
        } catch (err) {
          // Refused before the body was read to its end: see lingerThenClose.
          if (!req.raw.complete) lingerThenClose(req.raw, reply.raw);
          throw err;
        }
      },
    );
  });

  app.get(
    '/messages/batches',
    {
      config,
      schema: {
        tags,
        summary: "This key's message batches, newest first",
        querystring: MessageBatchListQuery,
        response: { 200: MessageBatchList, ...errors(400, 401, 403, 500) },
      },
    },
    async (req) => messageBatches.list(req.caller, req.query, resultsUrl(req, settings.publicUrl)),
  );

  app.get(
    '/messages/batches/:id',
    {
      config,
      schema: {
        tags,
        summary: 'A message batch',
        params: IdParams,
        response: { 200: Ref, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => messageBatches.get(req.caller, req.params.id, resultsUrl(req, settings.publicUrl)),
  );

  app.post(
    '/messages/batches/:id/cancel',
    {
      config,
      schema: {
        tags,
        summary: 'Cancel a message batch: canceling, then ended once running requests finish',
        params: IdParams,
        response: { 200: Ref, ...errors(401, 403, 404, 409, 500) },
      },
    },
    async (req) => messageBatches.cancel(req.caller, req.params.id, resultsUrl(req, settings.publicUrl)),
  );

  app.delete(
    '/messages/batches/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete an ended message batch and its results',
        params: IdParams,
        response: { 200: MessageBatchDeleted, ...errors(401, 403, 404, 409, 500) },
      },
    },
    async (req) => messageBatches.delete(req.caller, req.params.id),
  );

  app.get(
    '/messages/batches/:id/results',
    {
      config: {
        ...config,
        openapi: {
          response: {
            200: {
              description:
                'One JSON object per line, in request order: `{custom_id, result: {type: succeeded, message} | {type: errored, error} | {type: canceled} | {type: expired}}`',
              content: { 'application/binary': { schema: Type.String() } },
            },
          },
        },
      },
      schema: {
        tags,
        summary: 'The results of an ended message batch as JSON Lines',
        params: IdParams,
        response: errors(401, 403, 404, 409, 410, 500),
      },
    },
    async (req, reply) => {
      const lines = await messageBatches.results(req.caller, req.params.id);
      // What Anthropic's results download is sent as (the SDK reads it as bytes, line by line).
      reply.type('application/binary');
      return reply.send(Readable.from(lines));
    },
  );
}
