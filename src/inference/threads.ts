import type { FastifyRequest } from 'fastify';
import { MessageAccumulator } from '../message-threads/accumulate.js';
import type { MessageThreadsService, ThreadTurn } from '../message-threads/service.js';
import type { Services } from '../services.js';
import type { AnswerStore } from './stored.js';
import { isObj } from './wires/texts.js';
import { inspectBody } from './wires/wire.js';

/** A threaded `/messages` call Gatehouse holds: its answer stored, its claim settled at the end. */
export interface HeldThread {
  store: AnswerStore;
  /** After the answer went out (or failed): a continue that stored nothing gives its claim back. */
  settle(): Promise<void>;
}

/** The beta flag of message threads: meant for a provider that holds them, not sent on. */
const THREADS_BETA = /^message-threads-/;

/**
 * What `/messages` adds around a call with `thread` when no provider of its model holds threads
 * (Anthropic's own API does, and gets the field passed through): the thread is held by Gatehouse.
 * The body becomes the whole conversation before the call, so any provider serves it, and the
 * reply is stored after it under its id for the next turn to continue. null: nothing to hold.
 * `sent`: the body before a preset completed it (what the caller itself set).
 */
export async function holdThread(
  { messageThreads, engine }: Pick<Services, 'messageThreads' | 'engine'>,
  req: FastifyRequest,
  sent: unknown,
): Promise<HeldThread | null> {
  const body = req.body;
  if (!isObj(body) || !isObj(body.thread) || !messageThreads.enabled || req.caller.isManagement) return null;
  if (engine.upstreamHoldsThreads(inspectBody(body).model)) return null;
  const scope = { organizationId: req.caller.organizationId, workspaceId: req.caller.workspaceId };
  const turn = await messageThreads.begin(body, scope, req.log, sent);
  if (!turn) return null;
  req.body = turn.body;
  withoutThreadsBeta(req);
  return {
    store: {
      async json(answer) {
        await messageThreads.save(turn, answer);
        return answer;
      },
      frames: (frames) => savedFrames(messageThreads, turn, frames),
    },
    settle: () => messageThreads.release(turn),
  };
}

/**
 * The stream's frames as they go; the reply, built from them, stored once the last one has been
 * passed on: no frame waits for the database, but the stream ends only after the write, so a client
 * that sends its next turn when the stream ends finds this one held. A stream cut short stores
 * nothing (the client then starts a new thread).
 */
async function* savedFrames(
  threads: MessageThreadsService,
  turn: ThreadTurn,
  frames: AsyncIterable<string | Buffer>,
): AsyncGenerator<string | Buffer> {
  const reply = new MessageAccumulator();
  for await (const frame of frames) {
    reply.feed(frame);
    yield frame;
  }
  const message = reply.message();
  if (message) await threads.save(turn, message);
}

function withoutThreadsBeta(req: FastifyRequest): void {
  const header = req.headers['anthropic-beta'];
  if (header === undefined) return;
  const flags = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '' && !THREADS_BETA.test(f));
  if (flags.length) req.headers['anthropic-beta'] = flags.join(',');
  else delete req.headers['anthropic-beta'];
}
