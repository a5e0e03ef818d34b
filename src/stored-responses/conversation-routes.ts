import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../lib/errors.js';
import type { Router } from '../server/router.js';
import { errors, IdParams } from '../server/schemas.js';
import type { Services } from '../services.js';
import { inputItemsQuery } from './input-items.js';

const tags = ['Inference'];

const Metadata = Type.Record(Type.String(), Type.String(), {
  description: 'Up to 16 string pairs (keys up to 64 characters, values up to 512)',
});
/** An item as `/responses` takes it in `input`; checked by the service (its messages name the field). */
const InputItem = Type.Object({}, { additionalProperties: true });
const Conversation = Type.Object({
  id: Type.String(),
  object: Type.Literal('conversation'),
  created_at: Type.Integer({ description: 'Unix seconds' }),
  metadata: Metadata,
});
const ConversationDeleted = Type.Object({
  id: Type.String(),
  object: Type.Literal('conversation.deleted'),
  deleted: Type.Literal(true),
});
const ConversationItem = Type.Object(
  { id: Type.String(), type: Type.String() },
  { additionalProperties: true, description: 'An item in OpenAI’s shape (a message, a function call, …)' },
);
const ItemList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ConversationItem),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
});
// Lenient bodies: the service checks them, its 400s naming the field.
const CreateBody = Type.Object(
  {
    items: Type.Optional(Type.Array(InputItem, { description: 'Up to 20 items to start with' })),
    metadata: Type.Optional(Type.Union([Metadata, Type.Null()])),
  },
  { additionalProperties: true },
);
const UpdateBody = Type.Object(
  { metadata: Type.Union([Metadata, Type.Null()]) },
  { additionalProperties: true },
);
const AddItemsBody = Type.Object(
  { items: Type.Array(InputItem, { description: 'Up to 20 items, added at the end' }) },
  { additionalProperties: true },
);
const ItemParams = Type.Object({ id: Type.String({ minLength: 1 }), item_id: Type.String({ minLength: 1 }) });
/** Checked by `inputItemsQuery`; `include[]` may repeat and is accepted (items are kept whole). */
const ItemsQuery = Type.Object(
  {
    limit: Type.Optional(Type.String()),
    order: Type.Optional(Type.String()),
    after: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** Conversations belong to an API key's workspace; management keys get 403 (as on inference). */
function apiCaller(req: FastifyRequest) {
  if (req.caller.isManagement) throw forbidden('Management keys cannot use conversations; use an API key');
  return req.caller;
}

/**
 * OpenAI's Conversations API (`client.conversations.*`): another workspace's conversation is a
 * 404, as an unknown one.
 */
export async function conversationRoutes(app: Router, { conversations }: Pick<Services, 'conversations'>) {
  const config = { auth: 'api' as const };
  app.post(
    '/conversations',
    {
      config,
      schema: {
        tags,
        summary: 'Creates a conversation (its items continue with `conversation` on POST /responses)',
        body: Type.Union([CreateBody, Type.Null()]),
        response: { 200: Conversation, ...errors(400, 401, 403) },
      },
    },
    async (req) => conversations.create(apiCaller(req), req.body),
  );

  app.get(
    '/conversations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'A conversation',
        params: IdParams,
        response: { 200: Conversation, ...errors(401, 403, 404) },
      },
    },
    async (req) => conversations.get(apiCaller(req), req.params.id),
  );

  app.post(
    '/conversations/:id',
    {
      config,
      schema: {
        tags,
        summary: "Replaces a conversation's metadata",
        params: IdParams,
        body: UpdateBody,
        response: { 200: Conversation, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => conversations.update(apiCaller(req), req.params.id, req.body),
  );

  app.delete(
    '/conversations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Deletes a conversation and its items',
        params: IdParams,
        response: { 200: ConversationDeleted, ...errors(401, 403, 404) },
      },
    },
    async (req) => conversations.delete(apiCaller(req), req.params.id),
  );

  app.get(
    '/conversations/:id/items',
    {
      config,
      schema: {
        tags,
        summary: "A conversation's items, newest first unless `order=asc`",
        params: IdParams,
        querystring: ItemsQuery,
        response: { 200: ItemList, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) =>
      conversations.items(
        apiCaller(req),
        req.params.id,
        inputItemsQuery(req.query as Record<string, unknown>),
      ),
  );

  app.post(
    '/conversations/:id/items',
    {
      config,
      schema: {
        tags,
        summary: 'Adds items at the end of a conversation',
        params: IdParams,
        body: AddItemsBody,
        response: { 200: ItemList, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => conversations.addItems(apiCaller(req), req.params.id, req.body),
  );

  app.get(
    '/conversations/:id/items/:item_id',
    {
      config,
      schema: {
        tags,
        summary: 'One item of a conversation',
        params: ItemParams,
        response: { 200: ConversationItem, ...errors(401, 403, 404) },
      },
    },
    async (req) => conversations.item(apiCaller(req), req.params.id, req.params.item_id),
  );

  app.delete(
    '/conversations/:id/items/:item_id',
    {
      config,
      schema: {
        tags,
        summary: 'Deletes one item of a conversation; answers the conversation',
        params: ItemParams,
        response: { 200: Conversation, ...errors(401, 403, 404) },
      },
    },
    async (req) => conversations.deleteItem(apiCaller(req), req.params.id, req.params.item_id),
  );
}
