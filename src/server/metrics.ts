import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Histogram, type Registry } from 'prom-client';

/** Prometheus metrics: requests by route and status, and a latency histogram, at GET /metrics. */
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

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
  return registry;
}
