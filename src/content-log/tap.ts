import type { FastifyReply } from 'fastify';
import type { ChatChunk, ChatResponse } from '../formats/chat.js';
import { ApiError } from '../lib/errors.js';
import type { RelayFrame } from '../providers/types.js';
import type { InferenceCall, RouteInfo } from '../routing/call.js';
import type { Completed, Streaming } from '../routing/engine.js';
import {
  audioReader,
  type ContentError,
  type ContentInput,
  type ContentOutput,
  chatOutput,
  chunkReader,
  frameReader,
  inputOf,
  laneOutput,
  rankingOutput,
  requestInput,
  type StreamReader,
  transcriptOutput,
  transcriptReader,
} from './capture.js';
import type { ContentLog } from './service.js';

/**
 * Where the inference routes hand content to the content log: a whole answer once the response
 * has gone out (the socket closed or finished), a stream once its last item went by. Nothing here
 * waits on the content log.
 */

/** A rerank or audio call's request (requestInput); a chat-kind call's messages. */
const inputFor = (call: InferenceCall, info: RouteInfo): ContentInput =>
  ['rerank', 'speech', 'transcription'].includes(call.wire.kind)
    ? requestInput(info.sentBody)
    : inputOf(call.wire.endpoint, info.sentBody);

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
    input: () => inputFor(call, info),
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

/** A whole answer of a call that is no chat, offered when the response has been sent. */
function captureAnswer(
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  reply: FastifyReply,
  output: () => ContentOutput,
): void {
  if (log.knownOff(call.caller.workspaceId)) return;
  reply.raw.once('close', () => offer(log, call, info, output(), null));
}

/** A rerank: its query and documents, and the ranking the caller received. */
export function captureRanking(
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  reply: FastifyReply,
  results: { index: number; relevance_score: number }[],
): void {
  captureAnswer(log, call, info, reply, () => rankingOutput(results));
}

/** A whole transcription: its prompt and settings (never the audio), and the text. */
export function captureTranscript(
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  reply: FastifyReply,
  answer: { parsed: unknown; body: string },
): void {
  captureAnswer(log, call, info, reply, () => transcriptOutput(answer.parsed, answer.body));
}

/** Bytes relayed as they arrive, read as they pass. */
function tapBytes(
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  source: AsyncIterable<Buffer>,
  reader: () => StreamReader<Buffer>,
): AsyncIterable<Buffer> {
  if (log.knownOff(call.caller.workspaceId)) return source;
  return tapped(log, call, info, source, reader());
}

/** Speech: its input text and settings, and a note of the audio (its type and size, never its bytes). */
export const tapSpeech = (
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  audio: AsyncIterable<Buffer>,
  contentType: string,
): AsyncIterable<Buffer> => tapBytes(log, call, info, audio, () => audioReader(contentType));

/** A streamed transcription: its prompt and settings, and the text of its events. */
export const tapTranscript = (
  log: ContentLog,
  call: InferenceCall,
  info: RouteInfo,
  events: AsyncIterable<Buffer>,
): AsyncIterable<Buffer> => tapBytes(log, call, info, events, transcriptReader);
