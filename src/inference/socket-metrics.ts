import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * How a turn of the Responses WebSocket mode ended: its final event (`response.completed`,
 * `response.incomplete`, `response.failed`), an `error` event instead of a response (refused, or
 * the call failed before it started), or the client gone (or the socket cut at shutdown) mid-response.
 */
export type TurnOutcome = 'completed' | 'incomplete' | 'failed' | 'error' | 'cancelled';
const OUTCOMES: TurnOutcome[] = ['completed', 'incomplete', 'failed', 'error', 'cancelled'];

export interface SocketMetrics {
  opened(): void;
  closed(): void;
  turn(outcome: TurnOutcome, seconds: number): void;
}

/**
 * The WebSocket mode's own metrics: its handshake is one HTTP request, the turns over it are not,
 * so they are counted here. Summed across `serve --workers N` (the gauge too: each worker's open
 * sockets).
 */
export function socketMetrics(registry: Registry): SocketMetrics {
  const turns = new Counter({
    name: 'gatehouse_websocket_turns_total',
    help: 'Responses WebSocket mode turns (response.create) by outcome',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'gatehouse_websocket_turn_duration_seconds',
    help: 'Responses WebSocket mode turn duration by outcome',
    labelNames: ['outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const open = new Gauge({
    name: 'gatehouse_websocket_connections',
    help: 'Open Responses WebSocket mode connections',
    aggregator: 'sum',
    registers: [registry],
  });
  // Every outcome at 0 from the start: a rate over a series that appears late misses its first turns.
  for (const outcome of OUTCOMES) turns.inc({ outcome }, 0);
  return {
    opened: () => open.inc(),
    closed: () => open.dec(),
    turn: (outcome, seconds) => {
      turns.inc({ outcome });
      duration.observe({ outcome }, seconds);
    },
  };
}
