/**
 * What the gateway's and the media service's HTTP servers share below the routes: how long a
 * client may take to send a request (slow-loris and slow-body protection), and the answer to a
 * request Node refuses before any route sees it (malformed, headers too large, too slow).
 */
import type { Socket } from 'node:net';

type Env = Record<string, string | undefined>;

export interface HttpTimeouts {
  /** The request line and headers must arrive within this, ms (408 and closed beyond; 0 = off). */
  headersTimeoutMs: number;
  /**
   * The whole request, body included, must arrive within this, ms (408 and closed beyond; 0 = off).
   * It bounds reading only: a long response (a stream, a slow model) is not cut.
   */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this, ms. */
  keepAliveTimeoutMs: number;
}

function msFrom(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}

/**
 * GATEHOUSE_HEADERS_TIMEOUT_MS (30 s), GATEHOUSE_REQUEST_TIMEOUT_MS (5 min: a 200 MB batch needs
 * ≥ 0.7 MB/s) and GATEHOUSE_KEEP_ALIVE_TIMEOUT_MS (72 s, above common load balancers' 60 s idle).
 */
export function loadHttpTimeouts(env: Env): HttpTimeouts {
  return {
    headersTimeoutMs: msFrom(env, 'GATEHOUSE_HEADERS_TIMEOUT_MS', 30_000),
    requestTimeoutMs: msFrom(env, 'GATEHOUSE_REQUEST_TIMEOUT_MS', 300_000),
    keepAliveTimeoutMs: Math.max(1, msFrom(env, 'GATEHOUSE_KEEP_ALIVE_TIMEOUT_MS', 72_000)),
  };
}

/** Node's refusals before routing, by error code: status, reason phrase, message. */
const REFUSALS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'The request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'The request headers are too large'],
};
const NOT_HTTP: [number, string, string] = [400, 'Bad Request', 'The request is not valid HTTP'];

/**
 * Fastify server options applying `t`, with a `clientErrorHandler` that answers in the service's
 * error envelope (`envelope(status, message)`) instead of Fastify's own body.
 */
export function httpServerOptions(t: HttpTimeouts, envelope: (status: number, message: string) => unknown) {
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout =
    t.requestTimeoutMs > 0 ? Math.min(t.headersTimeoutMs, t.requestTimeoutMs) : t.headersTimeoutMs;
  const shortest = Math.min(...[headersTimeout, t.requestTimeoutMs].filter((ms) => ms > 0));
  return {
    // Fastify sets 0 (off) unless told; Node's own default would be 300 s.
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    http: {
      headersTimeout,
      // How often Node looks for connections past those deadlines (its default, 30 s, would let a
      // slow client overstay a 30 s deadline by up to 30 s more).
      connectionsCheckingInterval: Number.isFinite(shortest)
        ? Math.min(5_000, Math.max(100, Math.floor(shortest / 4)))
        : 30_000,
    },
    clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const [status, reason, message] = REFUSALS[err.code ?? ''] ?? NOT_HTTP;
      // A response already on its way (a refused batch body still arriving) cannot be followed by another.
      const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && !inFlight?.headersSent) {
        const body = JSON.stringify(envelope(status, message));
        socket.write(
          `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      // end (FIN) rather than destroy at once: closing with the client's bytes still unread would
      // reset the connection and could discard the answer before the client reads it.
      socket.end();
      setTimeout(() => socket.destroy(), 1_000).unref();
    },
  };
}

/**
 * A listen failure as an operator can act on it: a port in use (or not allowed) names the variable
 * that sets it, instead of Node's bare `listen EADDRINUSE`.
 */
export function listenError(err: unknown, variable: string, host: string, port: number): Error {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE')
    return new Error(
      `${variable}: port ${port} on ${host} is already in use; stop what holds it or set ${variable} to another port`,
    );
  if (code === 'EACCES')
    return new Error(
      `${variable}: not allowed to listen on port ${port} on ${host}; use a port above 1023 or set ${variable}`,
    );
  if (code === 'EADDRNOTAVAIL')
    return new Error(
      `HOST: ${host} is not an address of this machine (listening on port ${port}, set by ${variable})`,
    );
  return err instanceof Error ? err : new Error(String(err));
}

/** What closeWithin needs of a Fastify app. */
interface Closable {
  close(): Promise<unknown>;
  server: { closeAllConnections(): void; closeIdleConnections(): void };
  log: { warn(obj: object, msg: string): void };
}

/**
 * Closes the app: new connections are refused (and new requests on open keep-alive connections
 * get 503) while in-flight ones drain; what still runs after `graceMs` has its connection closed.
 * With `sweepIdleMs`, keep-alive connections that go idle while others drain are closed as they do
 * (the server closes only those idle at the start; the rest would wait for their keep-alive timeout).
 */
export async function closeWithin(app: Closable, graceMs: number, sweepIdleMs?: number): Promise<void> {
  const cut = setTimeout(() => {
    app.log.warn({ grace_ms: graceMs }, 'shutdown grace over: closing the remaining connections');
    app.server.closeAllConnections();
  }, graceMs);
  const sweep = sweepIdleMs ? setInterval(() => app.server.closeIdleConnections(), sweepIdleMs) : undefined;
  try {
    await app.close();
  } finally {
    clearTimeout(cut);
    clearInterval(sweep);
  }
}
