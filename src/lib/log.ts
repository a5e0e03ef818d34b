import pino from 'pino';
import { redactUrl } from './redact-url.js';

/**
 * The one logger type of Gatehouse: pino, as Fastify uses it. The composition root creates it
 * first and hands it (or a child) to every component, so background work — accounting retries,
 * the batch worker, Redis outages, interns — reaches the same log stream as the requests.
 */
export type Log = pino.Logger;

/**
 * Secrets travel only in headers and bodies; neither is logged, and these paths are redacted
 * should a serializer ever include them.
 */
const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'req.body',
  'headers.authorization',
  'headers["x-api-key"]',
];

/**
 * Fastify's `req` serializer (same fields), with credential-looking query parameters redacted
 * (`?api_key=…` → `?api_key=[REDACTED]`): keys sent in a query string never reach the log. Fastify
 * takes a logger's own serializers over its defaults, for every line that carries `req`.
 */
export const logSerializers = {
  req: (req: {
    method?: string;
    url?: string;
    host?: string;
    ip?: string;
    headers?: Record<string, unknown>;
    socket?: { remotePort?: number };
  }) => ({
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
};

export interface LogOptions {
  level: string;
  /** Where the JSON lines go (default: standard output). */
  stream?: pino.DestinationStream;
  /** Fields on every line (e.g. `{ process: 'worker' }`). */
  base?: Record<string, unknown>;
}

export function createLog(opts: LogOptions): Log {
  const options: pino.LoggerOptions = {
    level: opts.level,
    redact: REDACT_PATHS,
    serializers: logSerializers,
    ...(opts.base ? { base: opts.base } : {}),
  };
  return opts.stream ? pino(options, opts.stream) : pino(options);
}

/** A logger that writes nothing (unit tests of components that take a Log). */
export const silentLog: Log = pino({ level: 'silent' });
