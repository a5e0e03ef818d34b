import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GenerationDetail } from '../activity/schemas.js';
import { captureRanking, captureWhole, tapStream } from '../content-log/tap.js';
import { type FileWire, inlineFiles } from '../files/references.js';
import type { CompactionDraft } from '../formats/compaction.js';
import type { CallSignal } from '../lib/call-abort.js';
import { ApiError, notFound } from '../lib/errors.js';
import type { Skin } from '../presets/config.js';
import type { ForwardedJson } from '../providers/types.js';
import type { Body, InferenceCall, RouteInfo } from '../routing/call.js';
import type { Streaming } from '../routing/engine.js';
import { parsePreferences } from '../routing/preferences.js';
import type { OpenapiOnly } from '../server/openapi-only.js';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { requestTrace, serveTraced } from '../telemetry/spans.js';
import { DROPPED_FIELDS_HEADER } from './decorate.js';
import {
  AnthropicMessage,
  ChatCompletion,
  ChatCompletionRequest,
  CompactedResponse,
  CompletionRequest,
  CountTokensRequest,
  CountTokensResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Generation,
  InputTokensRequest,
  InputTokensResponse,
  jsonOrStream,
  MessagesRequest,
  OPENAPI_SCHEMAS,
  RerankRequest,
  RerankResponse,
  ResponseCompactRequest,
  ResponseObject,
  ResponsesRequest,
  TextCompletion,
} from './openapi-schemas.js';
import { type AnswerStore, storeAround } from './stored.js';
import { callAbort, sendSse } from './stream.js';
import { holdThread } from './threads.js';
import { compactWire } from './wires/compact.js';
import { completionsWire } from './wires/completions.js';
import { type CallerWire, type ChatWire, countTokensWire, WIRES } from './wires/index.js';
import { inputTokensWire } from './wires/input-tokens.js';
import { rerankWire } from './wires/rerank.js';
import { isObj } from './wires/texts.js';
import { forwardedHeaders, modelsOf } from './wires/wire.js';

const AnyBody = Type.Object({}, { additionalProperties: true });
const tags = ['Inference'];
const ERROR_STATUSES = [400, 401, 402, 403, 404, 413, 429, 500, 502];

/** What a body over the inference routes' limit is told (413). */
export const inferenceTooLarge = (limit: number) =>
  `The body is larger than ${limit} bytes, the most a model call takes (GATEHOUSE_INFERENCE_BODY_LIMIT)`;

/**
 * One call as the engine takes it: the body as sent (`sent`: the request's unless given), what the
 * wire reads of it, who asks.
 */
export function callOf(
  req: FastifyRequest,
  wire: CallerWire<unknown>,
  signal: CallSignal,
  sent = req.body as Body,
): InferenceCall {
  const { model, stream } = wire.inspect(sent);
  const models = modelsOf(sent);
  // A body naming its models in `models` only: the primary is its `model` from here on.
  const body = sent.model === undefined || sent.model === null ? { ...sent, model } : sent;
  return {
    caller: req.caller,
    wire,
    body,
    model,
    ...(models ? { models } : {}),
    stream,
    headers: forwardedHeaders(req.headers, wire.forwardHeaders),
    prefs: parsePreferences(body.provider),
    echoUpstream: isObj(body.debug) && body.debug.echo_upstream_body === true,
    signal,
    trace: requestTrace(req),
  };
}

/** How the call was served, in headers every answer carries (streams and relayed lane bodies too). */
export function describe(reply: FastifyReply, info: RouteInfo): void {
  reply.header('x-gatehouse-generation-id', info.generationId);
  reply.header('x-gatehouse-provider', info.served.endpoint.provider);
  // The catalog model that served: a lane's body names the provider's own id (and after a model
  // fallback, another model than the one asked for).
  reply.header('x-gatehouse-model', info.model.id);
  reply.header('x-gatehouse-route', info.lane ? 'passthrough' : 'translated');
  if (info.dropped.length) reply.header(DROPPED_FIELDS_HEADER, info.dropped.join(','));
}

/** A lane's whole answer: the provider's body as it came, or as the wire adds to it. */
function relayed(reply: FastifyReply, done: { forwarded: ForwardedJson }, added: unknown) {
  reply.code(done.forwarded.status).type('application/json');
  return reply.send(added === undefined ? done.forwarded.text : added);
}

/** A lane's stream, relayed frame by frame; a failure after it started ends it in the caller's format. */
async function* relay(
  wire: CallerWire<unknown>,
  s: Streaming & { lane: true },
): AsyncGenerator<string | Buffer> {
  try {
    const { relayFrame } = wire;
    if (relayFrame) for await (const f of s.frames) yield relayFrame(f, s.info);
    else for await (const f of s.frames) yield f.frame;
  } catch (err) {
    yield* failed(wire, s.info, err);
  }
}

/** `first`, then `rest`'s frames. */
async function* after<T>(first: T, rest: AsyncIterable<T>): AsyncGenerator<T> {
  yield first;
  yield* rest;
}

/** The error frames ending a stream that failed after it started, in the caller's format. */
export function failed(wire: CallerWire<unknown>, info: RouteInfo, err: unknown): string[] {
  const status = err instanceof ApiError ? err.status : 502;
  return wire.streamError(info, (err as Error).message || 'Upstream stream failed', status);
}

/**
 * Serves one chat-kind call: a lane's answer relayed as it came, or the translation encoded;
 * `presetId` is the preset its body was completed from (withPreset), `store` keeps the answer (the
 * /responses endpoint's stored responses).
 */
async function serveChat(
  { engine, contentLog, config }: Pick<Services, 'engine' | 'contentLog' | 'config'>,
  wire: ChatWire,
  req: FastifyRequest,
  reply: FastifyReply,
  presetId: string | undefined,
  store?: AnswerStore,
) {
  const call = callOf(req, wire, callAbort(reply));
  if (presetId) call.presetId = presetId;
  if (!call.stream) {
    const done = await engine.complete(call);
    describe(reply, done.info);
    captureWhole(contentLog, call, done, reply);
    if (done.lane) {
      const added = wire.relayJson?.(done, call);
      return relayed(reply, done, store ? await store.json(added ?? done.forwarded.json, done.info) : added);
    }
    const body = wire.encodeResponse(done, call);
    return reply.send(store ? await store.json(body, done.info) : body);
  }
  const s = tapStream(contentLog, call, await engine.stream(call));
  describe(reply, s.info);
  const settled = () => s.final() !== null;
  const keepaliveMs = config.streamKeepaliveMs;
  const debug = call.echoUpstream ? wire.debugFrame?.(s.info) : undefined;
  if (s.lane && !store && !debug) {
    // A lane's frames as they came (or as the wire rewrites them); a failure after the stream
    // started ends it in the caller's format.
    const { relayFrame } = wire;
    return sendSse(req, reply, s.frames, {
      encode: relayFrame ? (f) => relayFrame(f, s.info) : (f) => f.frame,
      failed: (err) => failed(wire, s.info, err),
      settled,
      keepaliveMs,
    });
  }
  return sendSse(req, reply, streamFrames(wire, s, call, store), { settled, keepaliveMs });
}

/**
 * A stream's frames in the caller's format — a lane's relayed, a translation encoded, after the
 * debug frame when the body asks for one — and stored through `store`: what the SSE body and the
 * Responses WebSocket mode (socket.routes.ts) both send.
 */
export function streamFrames(
  wire: ChatWire,
  s: Streaming,
  call: InferenceCall,
  store?: AnswerStore,
): AsyncIterable<string | Buffer> {
  const debug = call.echoUpstream ? wire.debugFrame?.(s.info) : undefined;
  const answer = s.lane
    ? relay(wire, s)
    : (wire.encodeStream as NonNullable<ChatWire['encodeStream']>)(s, call);
  const frames = debug ? after(debug, answer) : answer;
  return store ? store.frames(frames, s.info) : frames;
}

/**
 * A token count as a counting route answers it: the provider's own answer relayed on a lane, else
 * `answer` of the provider's count of the translated request, or of an estimate (said to be one).
 */
function sendCount(
  reply: FastifyReply,
  counted: Awaited<ReturnType<Services['engine']['countTokens']>>,
  answer: (n: number, estimated: boolean) => object,
) {
  reply.header('x-gatehouse-provider', counted.provider);
  if ('forwarded' in counted) {
    reply.header('x-gatehouse-route', 'passthrough');
    return relayed(reply, counted, undefined);
  }
  if ('counted' in counted) {
    reply.header('x-gatehouse-route', 'translated');
    return reply.send(answer(counted.counted, false));
  }
  reply.header('x-gatehouse-route', 'estimated');
  return reply.send(answer(counted.estimate, true));
}

/**
 * What `/responses` (over HTTP and over a WebSocket) does before its call: the stored state the
 * body names expanded, and the store of its answer. Gatehouse's compaction items become their
 * summaries (OpenAI's own stay for its lane); the turn is stored as it was sent.
 */
export async function responsesTurn(
  services: Pick<Services, 'storedResponses' | 'compaction' | 'inputFiles'>,
  req: FastifyRequest,
): Promise<AnswerStore> {
  const store = await storeAround(services.storedResponses, req);
  req.body = services.compaction.expand(req.body, req.caller.organizationId);
  await withFiles(services, req, 'responses');
  return store;
}

/**
 * The uploaded files a body names by id, put in it (files/references.ts): after everything that
 * expands it (a preset, a thread, stored responses), so that what they hold is covered too.
 */
export async function withFiles(
  { inputFiles }: Pick<Services, 'inputFiles'>,
  req: FastifyRequest,
  wire: FileWire,
): Promise<void> {
  req.body = await inlineFiles(wire, req.body, (id) => inputFiles.inline(req.caller, id));
}

/**
 * A chat-kind body that names a preset (`@preset/<slug>`, `<model>@preset/<slug>`, `preset`)
 * completed from it in place; the preset's id, recorded with the generation. Before anything else
 * reads the body: the model it runs is the preset's. `routingOnly` for bodies that take no settings
 * (token counts, compaction): the preset's model, provider preferences and system prompt only.
 */
export async function withPreset(
  { presets }: Pick<Services, 'presets'>,
  req: FastifyRequest,
  skin: Skin,
  routingOnly = false,
): Promise<string | undefined> {
  const resolved = await presets.resolve(req.caller, skin, req.body as Body, routingOnly);
  if (!resolved) return undefined;
  req.body = resolved.body;
  return resolved.presetId;
}

/** A handler run in the request's SERVER span (the parent of its attempts' spans) when tracing is on. */
export const traced =
  <R extends FastifyRequest>(handler: (req: R, reply: FastifyReply) => Promise<unknown>) =>
  (req: R, reply: FastifyReply) =>
    serveTraced(req, reply, req.routeOptions.url ?? req.url, () => handler(req, reply));

export async function inferenceRoutes(
  app: Router,
  services: Pick<
    Services,
    | 'engine'
    | 'config'
    | 'contentLog'
    | 'storedResponses'
    | 'messageThreads'
    | 'compaction'
    | 'generations'
    | 'presets'
    | 'feedback'
    | 'inputFiles'
  >,
) {
  const { engine } = services;
  const { inferenceBodyLimit } = services.config;
  for (const schema of OPENAPI_SCHEMAS) app.addSchema(schema);
  // `openapi`: the body and answer the document shows; the runtime takes any JSON object (see
  // openapi-schemas.ts) and sends the answer as it is.
  const route = (wire: CallerWire<unknown>, openapi: OpenapiOnly, description?: string) => ({
    // A model call's body: as large as the providers take, not the management routes' 1 MiB.
    bodyLimit: inferenceBodyLimit,
    // Errors, refusals included, in the caller's own format (Anthropic's on /messages).
    config: {
      auth: 'api' as const,
      verbatim: true,
      renderError: wire.renderError,
      tooLarge: inferenceTooLarge(inferenceBodyLimit),
      openapi,
    },
    schema: {
      tags,
      summary: wire.summary,
      ...(description ? { description } : {}),
      body: AnyBody,
      response: Object.fromEntries(ERROR_STATUSES.map((s) => [s, wire.errorSchema])),
    },
  });

  const chat = route(WIRES.chat, {
    body: Type.Ref(ChatCompletionRequest),
    response: { 200: jsonOrStream(ChatCompletion, 'The completion') },
  });
  app.post(
    WIRES.chat.path,
    chat,
    traced(async (req, reply) => {
      const presetId = await withPreset(services, req, 'chat');
      await withFiles(services, req, 'chat');
      return serveChat(services, WIRES.chat, req, reply, presetId);
    }),
  );
  // OpenAI's legacy Completions: a prompt in, a text out (code autocomplete, base models).
  const completion = route(completionsWire, {
    body: Type.Ref(CompletionRequest),
    response: { 200: jsonOrStream(TextCompletion, 'The completion') },
  });
  app.post(
    completionsWire.path,
    completion,
    traced(async (req, reply) => serveChat(services, completionsWire, req, reply, undefined)),
  );
  const messages = route(WIRES.messages, {
    body: Type.Ref(MessagesRequest),
    response: { 200: jsonOrStream(AnthropicMessage, 'The message') },
  });
  app.post(
    WIRES.messages.path,
    messages,
    traced(async (req, reply) => {
      const sent = req.body;
      const presetId = await withPreset(services, req, 'messages');
      const held = await holdThread(services, req, sent);
      if (!held) {
        await withFiles(services, req, 'messages');
        return serveChat(services, WIRES.messages, req, reply, presetId);
      }
      try {
        await withFiles(services, req, 'messages');
        return await serveChat(services, WIRES.messages, req, reply, presetId, held.store);
      } finally {
        await held.settle();
      }
    }),
  );
  // The WebSocket upgrade (socket.routes.ts) is no HTTP operation: the document tells of it here.
  const responses = route(
    WIRES.responses,
    {
      body: Type.Ref(ResponsesRequest),
      response: { 200: jsonOrStream(ResponseObject, 'The response') },
    },
    'Streamed as server-sent events with `stream: true`. The same calls run over a WebSocket too ' +
      "(OpenAI's Responses WebSocket mode): open `GET /responses` with a WebSocket upgrade and the " +
      'API key in `Authorization`, send `{"type": "response.create", …}` messages with the fields of ' +
      'this body, and receive each stream event as a JSON message; `previous_response_id` may name ' +
      "the connection's last response even with `store: false`.",
  );
  app.post(
    WIRES.responses.path,
    responses,
    traced(async (req, reply) => {
      const presetId = await withPreset(services, req, 'responses');
      return serveChat(services, WIRES.responses, req, reply, presetId, await responsesTurn(services, req));
    }),
  );

  /**
   * A Responses-shaped body (compact, input_tokens) with what Gatehouse holds put in, as for
   * /responses: stored responses and items expanded, its compaction items opened.
   */
  const withHeldState = async (req: FastifyRequest, body: unknown) => {
    const turn = await services.storedResponses.expand(body, req.caller, req.log);
    return services.compaction.expand(turn.body, req.caller.organizationId);
  };

  // OpenAI's compaction (the Agents SDK's compaction session): passed through to OpenAI's compact
  // endpoint for a model its Responses API serves, else one summarizing call whose summary comes
  // back sealed in a compaction item (compaction/service.ts). Billed and recorded as a generation.
  const compacting = route(compactWire, {
    body: Type.Ref(ResponseCompactRequest),
    response: { 200: Type.Ref(CompactedResponse) },
  });
  app.post(
    compactWire.path,
    compacting,
    traced(async (req, reply) => {
      const { caller } = req;
      // Stored state is expanded as for /responses; nothing is stored (a compaction is no response).
      // A compact body may name only its previous response: the stored chain is its whole input.
      const presetId = await withPreset(services, req, 'responses', true);
      const body = req.body as Body;
      const named = isObj(body) && body.input === undefined && body.previous_response_id;
      req.body = await withHeldState(req, named ? { ...body, input: [] } : body);
      await withFiles(services, req, 'responses');
      const call = callOf(req, compactWire, callAbort(reply));
      if (presetId) call.presetId = presetId;
      const done = await engine.complete(call);
      describe(reply, done.info);
      captureWhole(services.contentLog, call, done, reply);
      if (done.lane) return relayed(reply, done, undefined);
      const draft = compactWire.encodeResponse(done, call) as CompactionDraft;
      // An empty summary would drop the conversation without a word: the caller keeps its history.
      if (!draft.summary)
        throw new ApiError(502, `${done.info.model.id} returned no summary to compact with`);
      return reply.send(services.compaction.answer(draft, caller.organizationId));
    }),
  );

  // Claude Code and the Anthropic SDK's countTokens: Anthropic counts natively; an estimate
  // (marked as one) for a model no such provider serves.
  const counting = route(countTokensWire, {
    body: Type.Ref(CountTokensRequest),
    response: { 200: Type.Ref(CountTokensResponse) },
  });
  app.post(
    countTokensWire.path,
    counting,
    traced(async (req, reply) => {
      await withPreset(services, req, 'messages', true);
      await withFiles(services, req, 'messages');
      const counted = await engine.countTokens(callOf(req, countTokensWire, callAbort(reply)));
      return sendCount(reply, counted, (n, estimated) => ({
        input_tokens: n,
        ...(estimated ? { estimated } : {}),
      }));
    }),
  );

  // OpenAI's input token count of a Responses body: OpenAI's own on its models, Anthropic's count
  // for a model it serves, else an estimate marked as one. Not billed, as count_tokens.
  const inputTokens = route(inputTokensWire, {
    body: Type.Ref(InputTokensRequest),
    response: { 200: Type.Ref(InputTokensResponse) },
  });
  app.post(
    inputTokensWire.path,
    inputTokens,
    traced(async (req, reply) => {
      await withPreset(services, req, 'responses', true);
      req.body = await withHeldState(req, req.body);
      await withFiles(services, req, 'responses');
      const counted = await engine.countTokens(callOf(req, inputTokensWire, callAbort(reply)));
      return sendCount(reply, counted, (n, estimated) => ({
        object: 'response.input_tokens',
        input_tokens: n,
        ...(estimated ? { estimated } : {}),
      }));
    }),
  );

  const embeddings = WIRES.embeddings;
  const embedding = route(embeddings, {
    body: Type.Ref(EmbeddingsRequest),
    response: { 200: Type.Ref(EmbeddingsResponse) },
  });
  app.post(
    embeddings.path,
    embedding,
    traced(async (req, reply) => {
      const call = callOf(req, embeddings, callAbort(reply));
      const done = await engine.embed(call);
      describe(reply, done.info);
      if (done.lane) return relayed(reply, done, embeddings.relayJson?.(done, call));
      return reply.send(embeddings.encodeResponse(done, call));
    }),
  );

  // OpenRouter's rerank: always translated to the provider's rerank API, answered in OpenRouter's shape.
  const reranking = route(rerankWire, {
    body: Type.Ref(RerankRequest),
    response: { 200: Type.Ref(RerankResponse) },
  });
  app.post(
    rerankWire.path,
    reranking,
    traced(async (req, reply) => {
      const call = callOf(req, rerankWire, callAbort(reply));
      const done = await engine.rerank(call);
      describe(reply, done.info);
      if (done.lane) throw new ApiError(502, 'A rerank call cannot be relayed');
      captureRanking(services.contentLog, call, done.info, reply, done.response.results);
      return reply.send(rerankWire.encodeResponse(done, call));
    }),
  );

  app.get(
    '/generation',
    {
      // Documented only: the serializer would drop the fields the schema does not name.
      config: { auth: 'key', openapi: { response: { 200: Type.Ref(Generation) } } },
      schema: {
        tags,
        summary: 'One recorded generation',
        querystring: Type.Object({ id: Type.String({ minLength: 1 }) }),
        response: { 200: GenerationDetail, ...errors(400, 401, 404, 500) },
      },
    },
    async (req: FastifyRequest<{ Querystring: { id: string } }>, reply: FastifyReply) => {
      const { caller } = req;
      const row = await services.generations.get(caller.organizationId, req.query.id);
      if (!row) throw notFound('Generation');
      // Where its kept content is, when its workspace keeps content and the caller may read it.
      const scope = {
        organizationId: caller.organizationId,
        workspaceId: caller.isManagement ? null : caller.workspaceId,
      };
      const kept = (await services.contentLog.get(scope, row.id)) !== null;
      const content_url = kept ? `/api/v1/generation/content?id=${encodeURIComponent(row.id)}` : null;
      const feedback = await services.feedback.recent(row.id);
      return reply.send({ data: { ...row, content_url, feedback } });
    },
  );
}
