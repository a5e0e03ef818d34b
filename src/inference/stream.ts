import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CallAbort } from '../lib/call-abort.js';
import { extended } from '../lib/objects.js';

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** What a silent stream sends to keep proxies from cutting it: an SSE comment, which clients skip. */
const KEEPALIVE = ': GATEHOUSE PROCESSING\n\n';

/** How `sendSse` turns what `frames` yields into the body, and ends it. */
export interface SseOptions<T> {
  /** A frame's bytes (default: the item itself, already-encoded SSE text or a lane's bytes). */
  encode?: (frame: T) => string | Buffer;
  /**
   * The frames that end a stream which failed after it started, in the caller's format; without
   * it the failure cuts the connection.
   */
  failed?: (err: unknown) => string[];
  /**
   * The upstream stream is over and only its recording (the usage journal's write, at the end of
   * this loop turn) stands between the frames written and the end: then the frames wait for it
   * (at most to the end of this turn), so the last frames and the end of the response leave in
   * one write rather than two.
   */
  settled?: () => boolean;
  /**
   * A keep-alive comment after this long without a frame, and again each such interval while the
   * silence lasts (GATEHOUSE_STREAM_KEEPALIVE_MS; 0 or absent: none): reverse proxies and load
   * balancers cut a connection idle for 60-100 s, as a reasoning model's stream can be. It goes
   * between two frames, so every frame must end on a whole event — as every stream's do (a lane's
   * relayed bytes are cut at event boundaries: formats/sse-bytes.ts).
   */
  keepaliveMs?: number;
}

/**
 * Sends an SSE body built by `frames`, written straight to the socket with backpressure. Frames
 * produced in the same tick (the events of one upstream read) leave in one write: the response is
 * corked at the first and uncorked on the next tick, instead of one syscall per frame. Encoding
 * and failure handling are done here rather than by a generator between (each async generator
 * layer costs a few promises per frame). The caller going away aborts the call's
 * `callController`, which cancels the upstream call and so ends `frames`.
 */
export async function sendSse<T = string | Buffer>(
  request: FastifyRequest,
  reply: FastifyReply,
  frames: AsyncIterable<T>,
  { encode, failed, settled, keepaliveMs }: SseOptions<T> = {},
) {
  const res = reply.raw;
  // Fastify's onSend hooks do not run for a hijacked reply: its headers (x-request-id) go here.
  reply.hijack();
  res.writeHead(
    200,
    extended(reply.getHeaders() as OutgoingHttpHeaders, { 'x-request-id': request.id, ...SSE_HEADERS }),
  );
  request.log.debug('streaming response');
  // After `end` the socket may carry the next request's response: only this one's cork is undone.
  const uncorkLater = () => {
    if (!res.writableEnded) res.uncork();
  };
  const uncork = () => {
    if (settled?.()) setImmediate(uncorkLater);
    else res.uncork();
  };
  // Counted for the keep-alive timer, which compares the count between its ticks: no clock read
  // or timer reset per frame.
  let writes = 0;
  // A promise only when the socket is full: no promise per frame otherwise.
  const write = (frame: string | Buffer): Promise<void> | null => {
    writes++;
    if (res.writableCorked === 0) {
      res.cork();
      process.nextTick(uncork);
    }
    return res.write(frame) ? null : drained(res);
  };
  const keepalive = keepaliveMs ? keepAlive(res, keepaliveMs, () => writes) : undefined;
  try {
    try {
      for await (const frame of frames) {
        if (res.destroyed) break;
        const full = write(encode ? encode(frame) : (frame as string | Buffer));
        if (full) await full;
      }
    } catch (err) {
      if (!failed || res.destroyed) throw err;
      for (const frame of failed(err)) {
        const full = write(frame);
        if (full) await full;
      }
    }
    res.end();
  } catch (err) {
    request.log.warn({ err }, 'stream failed after it started');
    res.destroy(err as Error);
  } finally {
    clearInterval(keepalive);
  }
}

/**
 * Writes the keep-alive comment at each tick of an interval when no frame was written since the
 * previous tick (so after one to two intervals of silence), never while the socket is full; the
 * comment itself is not counted, so it repeats while the silence lasts. Unref'd: it holds no
 * process open; cleared by `sendSse` at the end, and by itself once the response is over.
 */
function keepAlive(res: ServerResponse, ms: number, written: () => number): NodeJS.Timeout {
  let seen = written();
  const timer = setInterval(() => {
    if (res.destroyed || res.writableEnded) return clearInterval(timer);
    const now = written();
    if (now !== seen) seen = now;
    else if (!res.writableNeedDrain) res.write(KEEPALIVE);
  }, ms);
  return timer.unref();
}

/** Resolves when `res` can take more, or is gone (then the loop above stops writing). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * The cancellation of an inference call, tied to the request's lifetime as `callController` is (a
 * CallAbort: no EventTarget per call; see lib/call-abort.ts).
 */
export function callAbort(reply: FastifyReply): CallAbort {
  const abort = new CallAbort();
  onClientGone(reply, (reason) => abort.abort(reason));
  return abort;
}

/**
 * An AbortController tied to the request's lifetime: aborted when the client disconnects before
 * the response has been completely written. It listens on the response (one listener, gone with
 * it), not on the socket: a keep-alive socket serves many requests, and a listener per request
 * there would pile up (and keep every call's controller alive) until the connection closes.
 */
export function callController(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  onClientGone(reply, (reason) => controller.abort(reason));
  return controller;
}

/** Calls `gone` if the response closes before it was completely written (the client left). */
function onClientGone(reply: FastifyReply, gone: (reason: Error) => void): void {
  const res = reply.raw;
  res.once('close', () => {
    if (!res.writableFinished) gone(new Error('client closed the connection'));
  });
}
