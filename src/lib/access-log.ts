import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * One access-log line per request, at `info`, once the response has gone out — in place of
 * Fastify's two (`incoming request` when it arrives, `request completed` when it ends), with the
 * fields of both. Serializing and writing a pino line is a measurable share of a short call, and
 * `info` is the default level. Fastify's other lines (a request that errored, …) are unchanged.
 * Headers and bodies are never logged. Passed to Fastify as its `logController`.
 */
const ADDRESS = Symbol('remoteAddress');
type AddressKept = FastifyRequest & { [ADDRESS]?: string };

export class AccessLog extends LogController {
  /** No line here. The client's address is kept now: once the response has gone out, the request
   *  of a `Connection: close` client no longer has its socket. */
  override incomingRequest(request: FastifyRequest): void {
    (request as AddressKept)[ADDRESS] = request.ip;
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
