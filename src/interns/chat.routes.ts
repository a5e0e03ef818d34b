import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { callController, sendSse } from '../inference/stream.js';
import { ApiError } from '../lib/errors.js';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import type { Services } from '../services.js';
import { annotate, requestTrace, serveTraced } from '../telemetry/spans.js';
import { InternChatBody, SteeredResponse } from './chat.schemas.js';
import { ChatChunks, type StreamError } from './chat-stream.js';
import { clearDeadline, installInternsGuards } from './guards.js';
import { sessionOwnerOf } from './run-grants.js';
import { RuntimeUnreachable, startTurn } from './runtime-client.js';
import type { RuntimeEvent, TurnRequest } from './runtime-protocol.js';

/** Reasons whose `retryable` is always true (digest §6.3). */
const RETRYABLE = new Set([
  'busy',
  'intern_not_ready',
  'intern_unreachable',
  'rate_limited',
  'stream_severed',
  'timeout',
]);

/** An HTTP error of the chat route: `{error:{code:<status>, message, metadata:{reason, retryable}}}`. */
const chatError = (status: number, reason: string, message: string, retryable = RETRYABLE.has(reason)) =>
  new ApiError(status, message, { reason, retryable });

const text = (content: InternChatBody['messages'][number]['content']): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => p.text).join('') : '';

/** What an intern's chat route uses: the interns and their runtimes, the programme, the interns settings. */
export interface InternChatRouteDeps extends Pick<Services, 'interns' | 'provisioner' | 'programme'> {
  config: Pick<Config, 'interns' | 'streamKeepaliveMs'>;
}

/**
 * POST /interns/{id}/chat/completions: the chat route of one intern (digest §6.3). The intern's
 * runtime runs the turn; this route checks the request, hands the last message to the runtime
 * (runtime-client.ts) and turns its events into chat-completion chunks (chat-stream.ts), with a
 * `: keepalive` comment whenever the stream has been idle for GATEHOUSE_INTERNS_KEEPALIVE_MS.
 */
export async function internChatRoutes(app: Router, services: InternChatRouteDeps): Promise<void> {
  await app.register(async (chat) => {
    // Management ("provisioning") keys do not chat with interns: 401 like a missing key (interns seed).
    chat.addHook('onRequest', async (request, reply) => {
      if (request.caller?.isManagement) {
        return sendError(reply, 401, 'Management keys cannot use the interns API; use an API key');
      }
    });
    installInternsGuards(
      chat,
      { config: services.config.interns, programme: services.programme },
      { codes: 'status' },
    );
    chat.setErrorHandler((err: FastifyError, request, reply) => {
      if (err instanceof ApiError) {
        if (err.metadata?.reason === 'busy') reply.header('retry-after', '1');
        const metadata = err.metadata?.reason
          ? err.metadata
          : { reason: err.status === 404 ? 'not_found' : 'bad_request', retryable: false };
        return reply.code(err.status).send({ error: { code: err.status, message: err.message, metadata } });
      }
      const status = err.statusCode ?? 500;
      if (err.validation || (status >= 400 && status < 500)) {
        const reason = status === 413 ? 'payload_too_large' : 'bad_request';
        const message = err.validation
          ? `Invalid ${err.validationContext ?? 'request'}: ${err.message}`
          : err.message;
        return reply
          .code(status)
          .send({ error: { code: status, message, metadata: { reason, retryable: false } } });
      }
      request.log.error({ err }, 'intern chat failed');
      return reply.code(500).send({ error: { code: 500, message: 'Internal server error' } });
    });

    chat.post(
      '/interns/:internId/chat/completions',
      {
        config: { auth: 'api', verbatim: true },
        schema: {
          tags: ['Interns'],
          summary: 'Chat with an intern (SSE; pauses with a gateway.provide_input tool call)',
          params: Type.Object({ internId: Type.String() }),
          body: InternChatBody,
          response: { 202: SteeredResponse },
        },
      },
      // The run's SERVER span: its model calls (the runtime's callbacks) are traced under it.
      async (request, reply) =>
        serveTraced(request, reply, request.routeOptions.url ?? request.url, () => {
          annotate(requestTrace(request), () => ({
            'gen_ai.operation.name': 'invoke_agent',
            'gen_ai.agent.id': (request.params as { internId: string }).internId,
            'gatehouse.key_hash_prefix': request.caller.keyHash.slice(0, 12),
          }));
          return chatWith(services, request, reply);
        }),
    );
  });
}

async function chatWith(services: InternChatRouteDeps, request: FastifyRequest, reply: FastifyReply) {
  const { internId } = request.params as { internId: string };
  const body = request.body as InternChatBody;
  if (body.stream !== true)
    throw chatError(400, 'bad_request', 'stream must be true: this route only streams');
  const last = body.messages[body.messages.length - 1];
  if (!last || (last.role !== 'user' && last.role !== 'tool')) {
    throw chatError(
      400,
      'bad_request',
      'The last message must be a user message or a tool message answering an interaction',
    );
  }
  if (last.role === 'tool' && !body.session_id) {
    throw chatError(400, 'bad_request', 'session_id is required when the last message is a tool message');
  }

  // Only the intern's owner and the workspace's administrators chat with it (access.ts).
  const intern = await services.interns.actable(request.caller, internId).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) throw chatError(404, 'not_found', 'Intern not found');
    if (err instanceof ApiError && err.status === 403) throw chatError(403, 'no_acting_user', err.message);
    throw err;
  });
  if (intern.status !== 'running') {
    throw chatError(
      409,
      'intern_not_ready',
      `The intern is ${intern.status}; provision it and wait until it is running`,
    );
  }
  const endpoint = services.provisioner.endpoint(intern.id);
  if (!endpoint)
    throw chatError(502, 'intern_unreachable', 'The intern’s runtime is not reachable from this node');

  const sessionId = body.session_id ?? `sess_${randomUUID().replace(/-/g, '')}`;
  annotate(requestTrace(request), () => ({
    'gen_ai.conversation.id': sessionId,
    'gen_ai.agent.name': intern.name,
  }));
  // The run's model calls are billed and guarded as this request's key, for as long as it streams.
  const grants = services.interns.grants;
  const grant = grants.issue(intern.id, request.caller, requestTrace(request));
  const turn: TurnRequest = {
    session_id: sessionId,
    approval_mode: body.approval_mode ?? 'self-drive',
    owner: sessionOwnerOf(request.caller),
    grant,
    message:
      last.role === 'tool'
        ? { role: 'tool', tool_call_id: last.tool_call_id, content: text(last.content) }
        : { role: 'user', content: text(last.content) },
  };

  const controller = callController(reply);
  let answer: Awaited<ReturnType<typeof startTurn>>;
  try {
    answer = await startTurn(endpoint, turn, controller.signal);
  } catch (err) {
    grants.revoke(grant);
    if (err instanceof RuntimeUnreachable) {
      request.log.warn({ intern: intern.id, err: err.message }, 'intern runtime unreachable');
      throw chatError(502, 'intern_unreachable', 'The intern’s runtime did not answer');
    }
    throw err;
  }
  if (answer.kind !== 'stream') grants.revoke(grant);
  if (answer.kind === 'steered') return reply.code(202).send({ session_id: sessionId, status: 'steered' });
  if (answer.kind === 'refused') {
    const { reason, message } = answer.refusal;
    throw chatError(answer.status, reason, message);
  }
  clearDeadline(request);
  return sendSse(
    request,
    reply,
    frames(
      answer.events,
      new ChatChunks(sessionId, services.config.interns.pauseTool),
      services.config.interns.keepaliveMs,
      controller.signal,
      () => grants.revoke(grant),
    ),
    { keepaliveMs: services.config.streamKeepaliveMs },
  );
}

/** SSE frames of a run, with keepalive comments while it is idle and a severed-stream error if it breaks. */
async function* frames(
  events: AsyncIterable<RuntimeEvent>,
  chunks: ChatChunks,
  keepaliveMs: number,
  signal: AbortSignal,
  ended: () => void,
): AsyncGenerator<string> {
  try {
    yield* runFrames(events, chunks, keepaliveMs, signal);
  } finally {
    ended();
  }
}

async function* runFrames(
  events: AsyncIterable<RuntimeEvent>,
  chunks: ChatChunks,
  keepaliveMs: number,
  signal: AbortSignal,
): AsyncGenerator<string> {
  yield chunks.role();
  const it = events[Symbol.asyncIterator]();
  let next = it.next();
  try {
    while (!chunks.done) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<'idle'>((resolve) => {
        timer = setTimeout(() => resolve('idle'), keepaliveMs);
      });
      const got = await Promise.race([next, idle]).finally(() => clearTimeout(timer));
      if (got === 'idle') {
        yield ': keepalive\n\n';
        continue;
      }
      if (got.done) break;
      next = it.next();
      const out = chunks.event(got.value);
      if (out) yield out;
    }
  } catch (err) {
    if (signal.aborted) return;
    const severed: StreamError = {
      code: 502,
      message: `The stream from the intern was severed: ${(err as Error).message}`,
      metadata: { reason: 'stream_severed', retryable: true },
    };
    yield chunks.error(severed, null, true);
    return;
  }
  if (!chunks.done && !signal.aborted) {
    yield chunks.error(
      {
        code: 502,
        message: 'The intern’s runtime ended the stream without finishing the run',
        metadata: { reason: 'stream_severed', retryable: true },
      },
      null,
      true,
    );
  }
}
