import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../lib/errors.js';
import type { Router } from '../server/router.js';
import { errors, IdParams } from '../server/schemas.js';
import type { Services } from '../services.js';
import { inputItemsQuery } from './input-items.js';

const tags = ['Inference'];

/** A stored Responses `Response`, as `POST /responses` returned it. */
const StoredResponse = Type.Object(
  { id: Type.String(), object: Type.Literal('response') },
  { additionalProperties: true },
);
/**
 * OpenAI's list of input items (a cursor page over item ids). Lenient: OpenAI's own page is
 * relayed as it came, whatever it leaves out.
 */
const InputItemList = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(Type.Object({ id: Type.Optional(Type.String()) }, { additionalProperties: true })),
    first_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    last_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    has_more: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);
/** Checked by `inputItemsQuery` (its messages name the field); `include[]` may repeat. */
const InputItemsQuery = Type.Object(
  {
    limit: Type.Optional(Type.String()),
    order: Type.Optional(Type.String()),
    after: Type.Optional(Type.String()),
  },
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
export async function storedResponsesRoutes(
  app: Router,
  { storedResponses }: Pick<Services, 'storedResponses'>,
) {
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

  app.get(
    '/responses/:id/input_items',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary:
          "A stored response's input items (its conversation's earlier turns, then its own input), newest first unless `order=asc`",
        params: IdParams,
        querystring: InputItemsQuery,
        response: { 200: InputItemList, ...errors(400, 401, 403, 404, 502) },
      },
    },
    async (req) =>
      storedResponses.inputItems(
        apiCaller(req),
        req.params.id,
        inputItemsQuery(req.query as Record<string, unknown>),
      ),
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
