import { Counter, Histogram, type Registry } from 'prom-client';

/** Upstream and accounting metrics of the routing engine, on the process registry. */
export function routingMetrics(registry: Registry) {
  return {
    upstreamLatency: new Histogram({
      name: 'gatehouse_upstream_duration_seconds',
      help: 'Upstream call latency (to the full response, or to the first byte of a stream) by provider and outcome',
      labelNames: ['provider', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'gatehouse_upstream_errors_total',
      help: 'Failed upstream calls by provider and status (0 = connection error or timeout)',
      labelNames: ['provider', 'status'],
      registers: [registry],
    }),
    fallbacks: new Counter({
      name: 'gatehouse_fallbacks_total',
      help: 'Times a call moved on from a provider to the next candidate',
      labelNames: ['from_provider'],
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'gatehouse_tokens_total',
      help: 'Tokens billed by model and kind (prompt, completion)',
      labelNames: ['model', 'kind'],
      registers: [registry],
    }),
    unpricedCalls: new Counter({
      name: 'gatehouse_unpriced_calls_total',
      help: 'Calls to models with no known price, by decision (allowed: served at cost 0; denied: GATEHOUSE_UNPRICED_MODELS=deny)',
      labelNames: ['decision'],
      registers: [registry],
    }),
    usageInvalid: new Counter({
      name: 'gatehouse_usage_invalid_total',
      help: 'Calls whose provider reported invalid usage (negative, non-numeric or absurd counts; clamped)',
      labelNames: ['provider'],
      registers: [registry],
    }),
    cost: new Counter({
      name: 'gatehouse_cost_usd_total',
      help: 'Cost billed by model, in USD',
      labelNames: ['model'],
      registers: [registry],
    }),
  };
}

export type RoutingMetrics = ReturnType<typeof routingMetrics>;
