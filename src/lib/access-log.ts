import type { FastifyInstance } from 'fastify';

/**
 * One access-log line per request, at `info`, once the response has gone out — in place of
 * Fastify's two (`incoming request` when it arrives, `request completed` when it ends), with the
 * fields of both. Serializing and writing a pino line is a measurable share of a short call, and
 * logging at `info` is the default. Servers that install it set `disableRequestLogging: true`.
 * Headers and bodies are never logged.
 */
export function installAccessLog(app: FastifyInstance): void {
  // The level is set once at start (LOG_LEVEL): above info, no hook at all.
  if (QUIET.has(app.log.level)) return;
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        req: { method: request.method, url: request.url, remoteAddress: request.ip },
        res: { statusCode: reply.statusCode },
        responseTime: reply.elapsedTime,
      },
      'request completed',
    );
    done();
  });
}

const QUIET = new Set(['warn', 'error', 'fatal', 'silent']);
