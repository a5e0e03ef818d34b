import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ChatChunk } from '../formats/chat.js';
import { TranslationError } from '../formats/chat.js';
import { chatStreamToMessages } from '../formats/messages.js';
import { chatStreamToResponses } from '../formats/responses.js';
import { sseJson } from '../formats/sse.js';
import type { CallSignal } from '../lib/call-abort.js';
import { ApiError, badRequest, notFound } from '../lib/errors.js';
import type { InferenceCall, RouteInfo } from '../routing/call.js';
import { parsePreferences } from '../routing/preferences.js';
import { costOf } from '../routing/pricing.js';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { chatParsers, EmbeddingsBody, embeddingsRequest, responseBodies } from './bodies.js';
import { decorateChunk, fullUsage } from './decorate.js';
import { modelsView } from './models.js';
import { callAbort, sendSse } from './stream.js';

const AnyBody = Type.Object({}, { additionalProperties: true });
const tags = ['Inference'];
const inferenceErrors = errors(400, 401, 402, 403, 404, 429, 500, 502);

/** Caller-format bodies → a canonical call; TranslationError → 400. */
function toCall(
  request: FastifyRequest,
  endpoint: InferenceCall['endpoint'],
  parse: (body: unknown) => InferenceCall['request'],
  signal: CallSignal,
): InferenceCall {
  const body = request.body as Record<string, unknown>;
  let canonical: InferenceCall['request'];
  try {
    canonical = parse(body);
  } catch (err) {
    if (err instanceof TranslationError) throw badRequest(err.message);
    throw err;
  }
  const debug = body.debug as { echo_upstream_body?: unknown } | undefined;
  return {
    caller: request.caller,
    endpoint,
    request: canonical,
    prefs: parsePreferences(body.provider),
    echoUpstream: debug?.echo_upstream_body === true,
    signal,
  };
}

/** Adds a final usage chunk when the upstream stream ended without one (the engine estimated it). */
async function* withUsage(
  stream: AsyncIterable<ChatChunk>,
  final: () => { usage: ChatChunk['usage'] } | null,
  info: RouteInfo,
): AsyncGenerator<ChatChunk> {
  let sawUsage = false;
  for await (const chunk of stream) {
    if (chunk.usage) sawUsage = true;
    yield chunk;
  }
  const f = final();
  if (!sawUsage && f?.usage) {
    yield {
      id: info.generationId,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: info.model.id,
      choices: [],
      usage: f.usage,
    };
  }
}

const errorOf = (err: unknown) =>
  err instanceof ApiError
    ? { code: err.status, message: err.message }
    : { code: 502, message: (err as Error).message || 'Upstream stream failed' };

export async function inferenceRoutes(app: Router, services: Services) {
  const { engine, storedResponses } = services;

  app.post(
    '/chat/completions',
    {
      config: { auth: 'api', verbatim: true },
      schema: {
        tags,
        summary: 'Chat completion (OpenAI format), streaming or not',
        body: AnyBody,
        response: inferenceErrors,
      },
    },
    async (req, reply) => {
      const abort = callAbort(reply);
      const call = toCall(req, 'chat', chatParsers.chat, abort);
      if (!call.request.stream) {
        return reply.send(responseBodies.chat(await engine.chat(call), call.request, call.echoUpstream));
      }
      const { stream, info, final } = await engine.chatStream(call);
      async function* frames() {
        try {
          for await (const chunk of withUsage(stream, final, info)) {
            const out = decorateChunk(chunk, info);
            if (chunk.usage) {
              const usage = fullUsage(
                chunk.usage,
                costOf(info.served.endpoint.pricing, chunk.usage),
                info.served.credential.isByok,
              );
              yield sseJson({ ...out, usage });
            } else yield sseJson(out);
          }
        } catch (err) {
          yield sseJson({
            id: info.generationId,
            object: 'chat.completion.chunk',
            created: Math.floor(Date.now() / 1000),
            model: info.model.id,
            provider: info.served.endpoint.provider,
            error: errorOf(err),
            choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
          });
        }
        yield 'data: [DONE]\n\n';
      }
      return sendSse(req, reply, frames());
    },
  );

  app.post(
    '/messages',
    {
      config: { auth: 'api', verbatim: true },
      schema: {
        tags,
        summary: 'Messages (Anthropic format), streaming or not',
        body: AnyBody,
        response: inferenceErrors,
      },
    },
    async (req, reply) => {
      const abort = callAbort(reply);
      const call = toCall(req, 'messages', chatParsers.messages, abort);
      if (!call.request.stream) {
        return reply.send(responseBodies.messages(await engine.chat(call), call.request));
      }
      const { stream, info, final } = await engine.chatStream(call);
      async function* frames() {
        for await (const e of chatStreamToMessages(withUsage(stream, final, info), call.request.model)) {
          yield sseJson(e.data, e.event);
        }
      }
      return sendSse(req, reply, frames());
    },
  );

  app.post(
    '/responses',
    {
      config: { auth: 'api', verbatim: true },
      schema: {
        tags,
        summary: 'Responses (OpenAI Responses format), streaming or not',
        body: AnyBody,
        response: inferenceErrors,
      },
    },
    async (req, reply) => {
      const abort = callAbort(reply);
      // Stored state the body names (previous_response_id, item references) → a plain body.
      const turn = await storedResponses.expand(req.body, req.caller, req.log);
      req.body = turn.body;
      const call = toCall(req, 'responses', chatParsers.responses, abort);
      if (!call.request.stream) {
        const served = await engine.chat(call);
        const body = responseBodies.responses(served, call.request);
        return reply.send(await storedResponses.save(turn, body, served.info.served.endpoint.provider));
      }
      const { stream, info, final } = await engine.chatStream(call);
      const events = chatStreamToResponses(
        withUsage(stream, final, info),
        call.request.model,
        call.request,
        info.generationId,
      );
      async function* frames() {
        for await (const e of storedResponses.tap(turn, events, info.served.endpoint.provider)) {
          yield sseJson(e.data, e.event);
        }
      }
      return sendSse(req, reply, frames());
    },
  );

  app.post(
    '/embeddings',
    {
      config: { auth: 'api', verbatim: true },
      schema: {
        tags,
        summary: 'Embeddings (OpenAI format)',
        body: EmbeddingsBody,
        response: inferenceErrors,
      },
    },
    async (req, reply) => {
      const abort = callAbort(reply);
      const body = req.body as Record<string, unknown>;
      const served = await engine.embeddings({
        caller: req.caller,
        endpoint: 'embeddings',
        request: embeddingsRequest(req.body),
        prefs: parsePreferences(body.provider),
        echoUpstream: false,
        signal: abort,
      });
      return reply.send(responseBodies.embeddings(served));
    },
  );

  app.get(
    '/models',
    { config: { auth: 'none' }, schema: { tags, summary: 'The model catalog, with pricing and providers' } },
    async () => ({ data: modelsView(services.catalog) }),
  );

  app.get(
    '/generation',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        summary: 'One recorded generation',
        querystring: Type.Object({ id: Type.String({ minLength: 1 }) }),
        response: errors(400, 401, 404, 500),
      },
    },
    async (req: FastifyRequest<{ Querystring: { id: string } }>, reply: FastifyReply) => {
      const row = await services.generations.get(req.caller.organizationId, req.query.id);
      if (!row) throw notFound('Generation');
      return reply.send({ data: row });
    },
  );
}
