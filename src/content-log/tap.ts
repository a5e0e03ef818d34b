import type { FastifyReply } from 'fastify';
import type { ChatChunk, ChatResponse } from '../formats/chat.js';
import { ApiError } from '../lib/errors.js';
import type { RelayFrame } from '../providers/types.js';
import type { InferenceCall, RouteInfo } from '../routing/call.js';
import type { Completed, Streaming } from '../routing/engine.js';
import {
  type ContentError,
  type ContentOutput,
  chatOutput,
  chunkReader,
  frameReader,
  inputOf,
  laneOutput,
  type StreamReader,
} from './capture.js';
import type { ContentLog } from './service.js';

/**
 * Where the inference routes hand content to the content log: a whole answer once the response
 * has gone out (the socket closed or finished), a stream once its last item went by. Nothing here
 * waits on the content log.
 */

function offer(
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  output: ContentOutput,
  error: ContentError | null,
) {
  void log.offer({
    generationId: info.generationId,
    organizationId: call.caller.organizationId,
    workspaceId: call.caller.workspaceId,
    input: () => inputOf(call.wire.endpoint, info.sentBody),
    output,
    error,
  });
}

/** A whole answer (after the filters on responses), offered when the response has been sent. */
export function captureWhole(
  log: ContentLog,
  call: InferenceCall,
  done: Completed<ChatResponse>,
  reply: FastifyReply,
): void {
  if (log.knownOff(call.caller.workspaceId)) return;
  reply.raw.once('close', () => {
    const output = done.lane ? laneOutput(call.wire.native, done.forwarded.json) : chatOutput(done.response);
    offer(log, call, done.info, output, null);
  });
}

async function* tapped<T>(
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  source: AsyncIterable<T>,
  reader: StreamReader<T>,
): AsyncGenerator<T> {
  let error: ContentError | null = null;
  try {
    for await (const item of source) {
      reader.read(item);
      yield item;
    }
  } catch (err) {
    error = {
      message: (err as Error).message || 'Upstream stream failed',
      status: err instanceof ApiError ? err.status : 502,
    };
    throw err;
  } finally {
    const output = reader.output();
    // The caller's last frames go first.
    setImmediate(() => offer(log, call, info, output, error));
  }
}

/** A stream (after the filters on responses) whose answer is assembled as it goes by. */
export function tapStream(log: ContentLog, call: InferenceCall, s: Streaming): Streaming {
  if (log.knownOff(call.caller.workspaceId)) return s;
  if (s.lane)
    return {
      ...s,
      frames: tapped<RelayFrame>(log, call, s.info, s.frames, frameReader(call.wire.native)),
    };
  return { ...s, chunks: tapped<ChatChunk>(log, call, s.info, s.chunks, chunkReader()) };
}
