/**
 * Domain errors. Services throw these; the server turns them into the standard envelope
 * `{error:{code,message}}`. Kept free of Fastify so services never import the web layer.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly metadata?: Record<string, unknown>,
    /** A named code (interns API: `name_taken`, …) sent as `error.code` instead of the status. */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, metadata?: Record<string, unknown>) =>
  new ApiError(400, message, metadata);
export const unauthorized = (message = 'Missing or invalid authentication credentials') =>
  new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (what = 'Resource') => new ApiError(404, `${what} not found`);
export const conflict = (message: string) => new ApiError(409, message);

/** An error whose `error.code` is a string, as the interns API answers (`{error:{code:'name_taken',…}}`). */
export const codedError = (
  status: number,
  code: string,
  message: string,
  metadata?: Record<string, unknown>,
) => new ApiError(status, message, metadata, code);

/** Error codes of a database that is away: the network, PostgreSQL shutting down or full, SQLite locked. */
const DATABASE_AWAY_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown: the server is restarting
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
  '08000', // connection_exception …
  '08001',
  '08003',
  '08004',
  '08006',
  'SQLITE_BUSY', // still locked after busy_timeout
]);

/** What pg and pg-pool say when a connection died, could not be opened in time, or was closed. */
const DATABASE_AWAY_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable)/;

/**
 * Whether `err` (or what it wraps) says the database cannot be reached right now — as opposed to
 * a query it refused. Such a failure is the caller's to retry: `databaseUnavailable()`.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === 'string' && DATABASE_AWAY_CODES.has(code)) return true;
    if (typeof message === 'string' && DATABASE_AWAY_MESSAGES.test(message)) return true;
    e = cause;
  }
  return false;
}

/** 503 with a Retry-After: the database is away (restarting, unreachable, out of connections). */
export const databaseUnavailable = () =>
  new ApiError(503, 'The database is unavailable; retry shortly', {
    reason: 'database_unavailable',
    retry_after_ms: 1000,
  });
