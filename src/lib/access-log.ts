import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

const ADDRESS = Symbol('remoteAddress');
type AddressKept = FastifyRequest & { [ADDRESS]?: string };
/** Levels at which the access line is not written. */
const QUIET = new Set(['warn', 'error', 'fatal', 'silent']);

/**
 * One access-log line per request, at `info`, once the response has gone out — in place of
 * Fastify's two (`incoming request` when it arrives, `request completed` when it ends), with the
 * fields of both. Serializing and writing a pino line is a measurable share of a short call, and
 * `info` is the default level. Fastify's other lines (a request that errored, …) are unchanged.
 * Headers and bodies are never logged. Passed to Fastify as its `logController` (one per server).
 */
export class AccessLog extends LogController {
  /** Whether the line is written at all: the level is set once at start (LOG_LEVEL). */
  private writes: boolean | undefined;

  private enabled(request: FastifyRequest): boolean {
    this.writes ??= !QUIET.has(request.log.level);
    return this.writes;
  }

  /** No line here. The client's address is kept now: once the response has gone out, the request
   *  of a `Connection: close` client no longer has its socket. */
  override incomingRequest(request: FastifyRequest): void {
    if (this.enabled(request)) (request as AddressKept)[ADDRESS] = request.ip;
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (error) {
      super.requestCompleted(error, request, reply, metadata);
      return;
    }
    if (!this.enabled(request)) return;
    // Through Fastify's `req` serializer, which reads these fields (method, url, host, ip).
    reply.log.info(
      {
        req: {
          method: request.method,
          url: request.url,
          host: request.host,
          ip: (request as AddressKept)[ADDRESS],
        },
        res: { statusCode: reply.statusCode },
        responseTime: reply.elapsedTime,
      },
      'request completed',
    );
  }
}
