import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../lib/errors.js';
import type { Router } from '../server/router.js';
import { errors, IdParams } from '../server/schemas.js';
import type { Services } from '../services.js';

const tags = ['Inference'];

/** A stored Responses `Response`, as `POST /responses` returned it. */
const StoredResponse = Type.Object(
  { id: Type.String(), object: Type.Literal('response') },
  { additionalProperties: true },
);
const DeletedResponse = Type.Object({
  id: Type.String(),
  object: Type.Literal('response'),
  deleted: Type.Literal(true),
});

/** Stored responses belong to an API key's workspace; management keys get 403 (as on inference). */
function apiCaller(req: FastifyRequest) {
  if (req.caller.isManagement)
    throw forbidden('Management keys cannot read stored responses; use an API key');
  return req.caller;
}

/** `GET` and `DELETE /responses/{id}`: another workspace's response is a 404, as an unknown one. */
export async function storedResponsesRoutes(app: Router, services: Services) {
  const { storedResponses } = services;

  app.get(
    '/responses/:id',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'A stored response (one created with `store` not false, within its retention)',
        params: IdParams,
        response: { 200: StoredResponse, ...errors(401, 403, 404) },
      },
    },
    async (req) => storedResponses.get(apiCaller(req), req.params.id),
  );

  app.delete(
    '/responses/:id',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'Deletes a stored response',
        params: IdParams,
        response: { 200: DeletedResponse, ...errors(401, 403, 404) },
      },
    },
    async (req) => storedResponses.delete(apiCaller(req), req.params.id),
  );
}
