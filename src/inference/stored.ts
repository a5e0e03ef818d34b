import type { FastifyRequest } from 'fastify';
import { sseJson } from '../formats/sse.js';
import type { RouteInfo } from '../routing/call.js';
import type { StorableResponse, StoredResponsesService, Turn } from '../stored-responses/service.js';
import { isObj } from './wires/texts.js';

/**
 * What `/responses` adds around a call: the stored state the body names is expanded before it
 * (previous_response_id, item references: a conversation continues through any provider), and the
 * answer is stored after it — a lane's as OpenAI sent it (OpenAI stored it too), a translation's as
 * Gatehouse encoded it. A conversation is always sent whole: the provider that serves the next
 * turn need not be the one that stored the last.
 */
export interface AnswerStore {
  json(body: unknown, info: RouteInfo): Promise<unknown>;
  frames(frames: AsyncIterable<string | Buffer>, info: RouteInfo): AsyncIterable<string | Buffer>;
}

export async function storeAround(stored: StoredResponsesService, req: FastifyRequest): Promise<AnswerStore> {
  // Only what this workspace stored may be named: an id Gatehouse does not hold is a 404, never
  // passed to a provider (OpenAI holds every tenant's responses under the operator's key).
  const turn = await stored.expand(req.body, req.caller, req.log);
  req.body = turn.body;
  const upstreamStored = (info: RouteInfo) => info.lane && isObj(turn.body) && turn.body.store !== false;
  return {
    async json(body, info) {
      if (!isObj(body)) return body;
      const opts = { upstreamStored: upstreamStored(info) };
      return stored.save(turn, body as unknown as StorableResponse, info.served.endpoint.provider, opts);
    },
    frames: (frames, info) => storedFrames(stored, turn, frames, info, upstreamStored(info)),
  };
}

/**
 * The events whose data is the response object: read and annotated (`store`, the turn's ids), the
 * completed or incomplete one stored; a failed one is annotated too, so it says what the others said.
 */
const SNAPSHOT = /^event: (response\.(?:created|in_progress|completed|incomplete|failed))\ndata: (.*)\n\n$/s;

const parsed = (json: string): unknown => {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
};

/** A stream's frames as they go, the response snapshots annotated, the final one stored. */
async function* storedFrames(
  stored: StoredResponsesService,
  turn: Turn,
  frames: AsyncIterable<string | Buffer>,
  info: RouteInfo,
  upstreamStored: boolean,
): AsyncGenerator<string | Buffer> {
  async function* events() {
    for await (const text of frames) {
      // A frame of bytes holds no snapshot: those are frames of their own (wires/responses.ts).
      const m = typeof text === 'string' ? SNAPSHOT.exec(text) : null;
      const data = m ? parsed(m[2] as string) : undefined;
      yield data === undefined ? { event: '', data: {}, text } : { event: m?.[1] as string, data, text };
    }
  }
  for await (const e of stored.tap(turn, events(), info.served.endpoint.provider, { upstreamStored }))
    yield e.event ? sseJson(e.data, e.event) : e.text;
}
