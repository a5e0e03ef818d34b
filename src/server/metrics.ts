import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Histogram, type Registry } from 'prom-client';
import { isAuditRead } from '../lib/audit-read.js';

/**
 * Prometheus metrics: requests by route and status, and a latency histogram. Counted on the API's
 * app; served by `startMetricsListener` on a listener of their own (GATEHOUSE_METRICS_PORT).
 */
export function installMetrics(app: FastifyInstance, registry: Registry): Registry {
  collectDefaultMetrics({ register: registry, prefix: 'gatehouse_' });
  const requests = new Counter({
    name: 'gatehouse_http_requests_total',
    help: 'HTTP requests by method, route and status code',
    labelNames: ['method', 'route', 'status_code'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'gatehouse_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });

  app.addHook('onResponse', (request, reply, done) => {
    // The audit log's reads of a resource before a write are not requests anyone made.
    if (isAuditRead(request)) return done();
    // The route pattern, not the concrete URL, keeps label cardinality bounded.
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status_code: String(reply.statusCode),
    };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  return registry;
}

export interface MetricsListener {
  /** `http://host:port` of the listener. */
  url: string;
  close(): Promise<void>;
}

/**
 * GET /metrics on its own listener, loopback by default: the metrics name every tenant's models,
 * tokens and spend, so they are not served on the API's public port. A plain HTTP server (no
 * routes, hooks or logging of its own) answering only GET/HEAD /metrics; anything else is 404.
 */
export async function startMetricsListener(
  /** A registry, or what `serve --workers N`'s primary serves: every worker's metrics aggregated. */
  registry: { metrics(): Promise<string>; contentType: string },
  opts: { host: string; port: number },
): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `GATEHOUSE_METRICS_PORT: cannot listen on ${opts.host}:${opts.port} for /metrics (${err.code ?? err.message}); set another port or off`,
        ),
      ),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
