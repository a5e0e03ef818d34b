import { type Static, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type {
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Usage,
} from '../formats/chat.js';
import { TranslationError } from '../formats/chat.js';
import { chatRequestFromBody } from '../formats/chat-edge.js';
import { chatResponseToMessages, type MessagesHeaders, messagesRequestToChat } from '../formats/messages.js';
import { chatResponseToResponses, responsesRequestToChat } from '../formats/responses.js';
import type { EndpointName, RouteInfo } from '../routing/call.js';
import type { Cost } from '../routing/pricing.js';
import { decorateChatResponse, fullUsage } from './decorate.js';

/**
 * The caller-format request parsers and non-streaming response bodies of each inference endpoint,
 * shared by the HTTP routes and the batch worker so that a batch result's body is exactly what the
 * synchronous endpoint would have answered.
 */

/** Caller body → canonical chat request, per chat-shaped endpoint; TranslationError names the field. */
export const chatParsers: Record<
  Exclude<EndpointName, 'embeddings'>,
  (body: unknown, headers?: MessagesHeaders) => ChatRequest
> = {
  chat: chatRequestFromBody,
  messages: messagesRequestToChat,
  responses: responsesRequestToChat,
};

export const EmbeddingsBody = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.Union([
      Type.String(),
      Type.Array(Type.String(), { minItems: 1 }),
      Type.Array(Type.Integer(), { minItems: 1 }),
      Type.Array(Type.Array(Type.Integer()), { minItems: 1 }),
    ]),
    encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
    dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
    user: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const embeddingsCheck = TypeCompiler.Compile(EmbeddingsBody);

/** An embeddings body (validated as the route's schema does) → the canonical request. */
export function embeddingsRequestFromBody(body: unknown): EmbeddingsRequest {
  if (!embeddingsCheck.Check(body)) {
    const first = embeddingsCheck.Errors(body).First();
    const path = first?.path ? first.path.slice(1).replaceAll('/', '.') : 'body';
    throw new TranslationError(`${path || 'body'}: ${first?.message ?? 'invalid embeddings request'}`);
  }
  return embeddingsRequest(body);
}

export const embeddingsRequest = (body: Static<typeof EmbeddingsBody>): EmbeddingsRequest => ({
  model: body.model,
  input: body.input,
  encoding_format: body.encoding_format,
  dimensions: body.dimensions,
  user: body.user,
});

/** What the engine returns for a non-streaming call. */
export interface Served<R> {
  response: R;
  info: RouteInfo;
  usage: Usage;
  cost: Cost;
}

/** The response body of each endpoint for a served non-streaming call. */
export const responseBodies = {
  chat: (r: Served<ChatResponse>, _req: ChatRequest, echoUpstream: boolean) =>
    decorateChatResponse(r.response, r.info, r.usage, r.cost, echoUpstream),
  messages: (r: Served<ChatResponse>, req: ChatRequest) =>
    chatResponseToMessages({ ...r.response, usage: r.usage, model: r.info.model.id }, req.model),
  responses: (r: Served<ChatResponse>, req: ChatRequest) =>
    chatResponseToResponses({ ...r.response, usage: r.usage, id: r.info.generationId }, req.model, req),
  embeddings: (r: Served<EmbeddingsResponse>) => ({
    ...r.response,
    id: r.info.generationId,
    model: r.info.model.id,
    provider: r.info.served.endpoint.provider,
    usage: fullUsage(r.usage, r.cost, r.info.served.credential.isByok),
  }),
};
