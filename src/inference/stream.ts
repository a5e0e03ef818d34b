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

/**
 * An AbortController tied to the request's lifetime: aborted when the client disconnects before
 * the response has been completely written. It listens on the response (one listener, gone with
 * it), not on the socket: a keep-alive socket serves many requests, and a listener per request
 * there would pile up (and keep every call's controller alive) until the connection closes.
 */
export function callController(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  const res = reply.raw;
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client closed the connection'));
  });
  return controller;
}
