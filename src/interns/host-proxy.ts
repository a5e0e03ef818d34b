import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Router } from '../server/router.js';
import type { Services } from '../services.js';
import { RUNTIME_TOKEN_HEADER } from './runtime-protocol.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1), never forwarded in either direction. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || named.has(k)) continue;
    out[k] = v;
  }
  return out;
}

/** The Host header without its port, lowercased, without a trailing dot ('' when absent). */
export function hostOf(header: string | undefined): string {
  if (!header) return '';
  const h = header.trim().toLowerCase();
  const bare = h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.replace(/:\d*$/, '');
  return bare.replace(/\.$/, '');
}

function notFound(reply: FastifyReply, message: string) {
  return reply
    .code(404)
    .type('application/json; charset=utf-8')
    .send({ error: { code: 404, message } });
}

/** What the host proxy uses: the interns domain, and the runtimes' hostnames and endpoints. */
export interface InternHostProxyDeps extends Pick<Services, 'provisioner'> {
  config: Pick<Config, 'interns'>;
}

/**
 * Proxies requests whose Host is an intern's hostname (`*.<GATEHOUSE_INTERNS_DOMAIN>`) to that
 * intern's runtime, streamed both ways; the runtime's `/_runtime/` side is never reachable this
 * way. Requests for other hosts go on to the gateway's own routes untouched.
 */
export function installInternHostProxy(app: Router, { config, provisioner }: InternHostProxyDeps): void {
  const suffix = `.${config.interns.domain.replace(/^\.+/, '')}`;

  // Callback style: an async hook would cost every request (inference too) a promise.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const host = hostOf(request.headers.host);
    if (host.endsWith(suffix)) proxy(request, reply, host);
    else done();
  });

  /** Answers a request for an intern's hostname: relayed to its runtime, or a 404. */
  function proxy(request: FastifyRequest, reply: FastifyReply, host: string): void {
    const internId = provisioner.internOfHostname(host);
    if (!internId) {
      notFound(reply, `No intern is served at ${host}`);
      return;
    }
    // Normalized as the runtime would see it (dot segments, absolute-form targets, %-escapes).
    let target: URL;
    try {
      const raw = request.raw.url ?? '/';
      target = new URL(raw.startsWith('/') ? `http://runtime.invalid${raw}` : raw);
    } catch {
      notFound(reply, 'Not found');
      return;
    }
    let decoded = target.pathname;
    try {
      decoded = decodeURIComponent(target.pathname);
    } catch {}
    if (/^\/+_runtime(\/|$)/i.test(decoded)) {
      notFound(reply, 'Not found');
      return;
    }
    const path = `${target.pathname}${target.search}`;
    const endpoint = provisioner.endpoint(internId);
    if (!endpoint) {
      notFound(reply, `No intern is served at ${host}`);
      return;
    }

    reply.hijack();
    const { raw: req } = request;
    const res = reply.raw;
    const headers = endToEnd(req.headers);
    delete headers[RUNTIME_TOKEN_HEADER];
    headers['x-forwarded-for'] = request.ip;
    headers['x-forwarded-host'] = req.headers.host ?? host;
    headers['x-forwarded-proto'] = request.protocol;
    const upstream = httpRequest(`${endpoint.url}${path}`, { method: req.method, headers });
    upstream.on('response', (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, endToEnd(up.headers));
      up.pipe(res);
      up.on('error', () => res.destroy());
    });
    upstream.on('error', (err) => {
      request.log.warn({ intern: internId, err: err.message }, 'intern host proxy: runtime unreachable');
      if (!res.headersSent) {
        const body = JSON.stringify({ error: { code: 502, message: 'The intern’s runtime did not answer' } });
        res.writeHead(502, { 'content-type': 'application/json; charset=utf-8' });
        res.end(body);
      } else res.destroy();
    });
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }
}
