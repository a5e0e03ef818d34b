import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Sends an SSE body built by `frames` (already-encoded SSE text). Once the stream has started,
 * failures are the generator's to report as an in-band error event; the caller going away aborts
 * `controller`, which cancels the upstream call.
 */
export function sendSse(
  request: FastifyRequest,
  reply: FastifyReply,
  controller: AbortController,
  frames: AsyncIterable<string>,
) {
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client closed the connection'));
  });
  reply
    .code(200)
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('connection', 'keep-alive')
    .header('x-accel-buffering', 'no');
  request.log.debug('streaming response');
  return reply.send(Readable.from(frames, { objectMode: false }));
}

/** An AbortController tied to the request's lifetime (aborted when the client disconnects). */
export function callController(request: FastifyRequest): AbortController {
  const controller = new AbortController();
  request.raw.socket?.once('close', () => controller.abort(new Error('client closed the connection')));
  return controller;
}
