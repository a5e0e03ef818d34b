import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import type { SpendEvent } from '../credits/spend.js';
import type { IpcLink } from './ipc.js';

/**
 * The cluster bus: what one node must tell the others at once, over Redis pub/sub (REDIS_URL).
 *
 * - Invalidations: a key, guardrail/assignment, BYOK or credits write on one node drops the
 *   matching cached entries on every node (instead of waiting for their TTLs: 5 s for keys,
 *   policies and BYOK credentials, 30 s for spend counters).
 * - Spend: every billed call, so each node's spend counters (key limits, guardrail budgets,
 *   credit balance) count what the other nodes spend as soon as they spend it.
 *
 * Delivery is best effort and never blocks a request: `publish` only queues, and the queue is sent
 * as one PUBLISH per synchronous run (a microtask: before the response of the billed call is
 * written, so the other nodes usually hear of it before its client can call them) on its own
 * connection; a second connection subscribes. Every
 * message carries the sender's node id, and a node ignores its own. When Redis is unreachable the
 * caches fall back to their TTLs: the outage is logged once, messages are dropped, and once Redis
 * is back each node drops its caches and reloads its counters (a `resync`, delivered locally when
 * its subscription is re-established and broadcast by a node that dropped messages), so nothing
 * missed during the outage outlives it.
 *
 * Without a Redis URL, a worker of `serve --workers N` sends its messages to the primary process
 * over the cluster's IPC channel, and the primary relays them to the other workers (`ipc`); the
 * same envelopes, one message per synchronous run. Otherwise the bus does nothing.
 *
 * Channel: `<prefix>:cluster` (GATEHOUSE_REDIS_PREFIX keeps deployments or test runs apart on one
 * Redis). Payload: `{"v":1,"node":"…","events":[…]}`.
 */

export type ClusterEvent =
  /** A key's row changed (disabled, deleted, limit or expiry changed); no hash = every key. */
  | { kind: 'key'; hash: string | null }
  /** A guardrail or an assignment changed: effective policies are stale. */
  | { kind: 'policy' }
  /** The organization's BYOK credentials changed. */
  | { kind: 'byok'; organizationId: string }
  /** The organization's credits ledger changed (its balance must be reloaded). */
  | { kind: 'credits'; organizationId: string }
  /** A billed call on another node. */
  | { kind: 'spend'; event: SpendEvent }
  /** An operator reloaded the model catalog through the API: reload this node's too. */
  | { kind: 'catalog' }
  /** Messages may have been lost: drop every cache and reload the counters. */
  | { kind: 'resync' };

export interface ClusterLogger {
  warn(msg: string): void;
  info(msg: string): void;
}

export interface ClusterBusOptions {
  /** Redis to talk through; null = a single node (the bus does nothing). */
  redisUrl: string | null;
  /** Prefix of the channel (`<prefix>:cluster`). Default `gatehouse`. */
  prefix?: string;
  logger?: ClusterLogger;
  /** Longest wait between reconnection attempts, ms (tests shorten it). */
  retryMaxMs?: number;
  /** Without Redis: the link to the primary of `serve --workers N`, which relays to the other workers. */
  ipc?: IpcLink | null;
}

interface Envelope {
  v: 1;
  node: string;
  events: ClusterEvent[];
}

/** Events queued while the first connection is being made (later, while Redis is down, they are dropped). */
const MAX_QUEUED = 10_000;

const consoleLogger: ClusterLogger = {
  warn: (msg) => console.warn(msg),
  info: (msg) => console.info(msg),
};

const isString = (v: unknown): v is string => typeof v === 'string';

/** Whether `e` is a well-formed event (messages come from other processes: trust, but check). */
function isEvent(e: unknown): e is ClusterEvent {
  if (!e || typeof e !== 'object') return false;
  const x = e as Record<string, unknown>;
  switch (x.kind) {
    case 'key':
      return x.hash === null || isString(x.hash);
    case 'policy':
    case 'catalog':
    case 'resync':
      return true;
    case 'byok':
    case 'credits':
      return isString(x.organizationId);
    case 'spend': {
      const s = x.event as Record<string, unknown> | null;
      return (
        !!s &&
        typeof s === 'object' &&
        isString(s.organizationId) &&
        (s.keyHash === null || isString(s.keyHash)) &&
        (s.userId === null || isString(s.userId)) &&
        typeof s.costUsd === 'number' &&
        typeof s.isByok === 'boolean' &&
        (isString(s.at) || typeof s.at === 'number')
      );
    }
    default:
      return false;
  }
}

export class ClusterBus {
  /** This process's id on the bus (its own messages come back and are ignored). */
  readonly nodeId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly channel: string;
  /** Counters, for tests and diagnostics. */
  readonly stats = { published: 0, received: 0, dropped: 0, resyncs: 0 };

  private readonly pub: Redis | null = null;
  private readonly sub: Redis | null = null;
  private readonly ipc: IpcLink | null = null;
  private readonly log: ClusterLogger;
  private readonly handlers: ((e: ClusterEvent) => void)[] = [];
  private queue: ClusterEvent[] = [];
  private scheduled = false;
  /** Events were dropped: the next message starts with a `resync`. */
  private lost = false;
  /** The publisher has been ready once (from then on, events are dropped while it is not). */
  private connectedOnce = false;
  private subscribed = false;
  /** Redis is known to be down (to log each outage once). */
  private down = false;
  private closed = false;

  constructor(opts: ClusterBusOptions) {
    this.log = opts.logger ?? consoleLogger;
    this.channel = `${opts.prefix ?? 'gatehouse'}:cluster`;
    if (!opts.redisUrl) {
      if (opts.ipc) {
        this.ipc = opts.ipc;
        opts.ipc.onBus((text) => this.receive(this.channel, text));
      }
      return;
    }
    const retryMaxMs = opts.retryMaxMs ?? 5_000;
    const common = {
      connectTimeout: 2_000,
      retryStrategy: (times: number) => Math.min(times * 200, retryMaxMs),
    };
    // Publishing never waits for a connection: while it is down, PUBLISH fails at once.
    this.pub = new Redis(opts.redisUrl, {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1_000,
      connectionName: `${this.channel}:pub`,
    });
    // Subscribed by hand on every (re)connection, so that a resync follows each one.
    this.sub = new Redis(opts.redisUrl, {
      ...common,
      autoResubscribe: false,
      maxRetriesPerRequest: null,
      connectionName: `${this.channel}:sub`,
    });
    for (const conn of [this.pub, this.sub]) {
      conn.on('error', (err: Error) => this.failed(err));
      conn.on('close', () => {
        if (conn === this.sub) this.subscribed = false;
        if (!this.closed) this.failed(new Error('connection closed'));
      });
    }
    this.pub.on('ready', () => {
      this.connectedOnce = true;
      this.schedule();
      this.recovered();
    });
    this.sub.on('ready', () => void this.resubscribe());
    this.sub.on('message', (channel: string, text: string) => this.receive(channel, text));
  }

  /** Whether a Redis URL was given, or an IPC link (the bus is live, even while Redis is down). */
  get enabled(): boolean {
    return this.pub !== null || this.ipc !== null;
  }

  /** Subscribed and able to publish right now. */
  get connected(): boolean {
    if (this.ipc) return this.ipc.connected;
    return this.pub?.status === 'ready' && this.subscribed;
  }

  /** Calls `handler` for every event from another node (and for local resyncs). */
  onEvent(handler: (e: ClusterEvent) => void): void {
    this.handlers.push(handler);
  }

  /** Tells the other nodes (no-op without Redis). Returns at once; never throws. */
  publish(event: ClusterEvent): void {
    if ((!this.pub && !this.ipc) || this.closed) return;
    if (this.queue.length >= MAX_QUEUED) this.drop();
    this.queue.push(event);
    this.schedule();
  }

  /**
   * Resolves true once both connections are up and subscribed (at once without Redis), false
   * after `timeoutMs`. Nodes wait for it at start-up, so they hear the others from their first
   * request; without it they still work, on the TTL bounds, until the bus connects.
   */
  async ready(timeoutMs = 2_000): Promise<boolean> {
    if (!this.pub) return true;
    const deadline = Date.now() + timeoutMs;
    while (!this.connected) {
      if (this.closed || Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return true;
  }

  /** Sends what is queued (waiting up to 1 s for a first connection: one-shot CLI commands), then disconnects. */
  async close(): Promise<void> {
    if (this.ipc && !this.closed) {
      await this.flush();
      this.ipc.flush();
      this.closed = true;
      return;
    }
    if (!this.pub || !this.sub || this.closed) return;
    if (this.queue.length > 0 && !this.connectedOnce) {
      const deadline = Date.now() + 1_000;
      while (this.pub.status !== 'ready' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
    }
    await this.flush();
    this.closed = true;
    await Promise.all(
      [this.pub, this.sub].map(async (conn) => {
        try {
          await conn.quit();
        } catch {
          conn.disconnect();
        }
      }),
    );
  }

  // -------------------------------------------------------------------------------------------

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    // One PUBLISH per synchronous run, whatever the number of events in it.
    queueMicrotask(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.ipc) {
      if (this.queue.length === 0) return;
      const envelope: Envelope = { v: 1, node: this.nodeId, events: this.queue };
      this.queue = [];
      // Spend can wait for the batch of this turn; an invalidation goes before its write is answered.
      this.ipc.sendBus(
        JSON.stringify(envelope),
        envelope.events.some((e) => e.kind !== 'spend'),
      );
      this.stats.published += envelope.events.length;
      return;
    }
    const pub = this.pub;
    if (!pub || (this.queue.length === 0 && !this.lost)) return;
    if (pub.status !== 'ready') {
      // Before the first connection, keep the events (bounded in publish); during an outage, drop
      // them: the other nodes are on their TTLs, and the resync sent once Redis is back covers them.
      if (this.connectedOnce) this.drop();
      return;
    }
    const events: ClusterEvent[] = this.lost ? [{ kind: 'resync' }, ...this.queue] : this.queue;
    this.lost = false;
    this.queue = [];
    const envelope: Envelope = { v: 1, node: this.nodeId, events };
    try {
      await pub.publish(this.channel, JSON.stringify(envelope));
      this.stats.published += events.length;
    } catch (err) {
      this.stats.dropped += events.length;
      this.lost = true;
      this.failed(err);
    }
  }

  private drop(): void {
    this.stats.dropped += this.queue.length;
    this.queue = [];
    this.lost = true;
  }

  private async resubscribe(): Promise<void> {
    const sub = this.sub;
    if (!sub || this.closed) return;
    try {
      await sub.subscribe(this.channel);
    } catch (err) {
      // The connection dropped again; its next 'ready' tries again.
      this.failed(err);
      return;
    }
    this.subscribed = true;
    // Whatever was published while this node was not subscribed is lost to it: start afresh.
    this.deliver({ kind: 'resync' });
    this.recovered();
  }

  private receive(channel: string, text: string): void {
    if (channel !== this.channel) return;
    let envelope: Envelope;
    try {
      envelope = JSON.parse(text) as Envelope;
    } catch {
      return;
    }
    if (envelope?.v !== 1 || !isString(envelope.node) || !Array.isArray(envelope.events)) return;
    if (envelope.node === this.nodeId) return;
    for (const e of envelope.events) {
      if (!isEvent(e)) continue;
      this.stats.received++;
      this.deliver(e);
    }
  }

  private deliver(e: ClusterEvent): void {
    if (e.kind === 'resync') this.stats.resyncs++;
    for (const h of this.handlers) {
      try {
        h(e);
      } catch (err) {
        this.log.warn(`Cluster bus: a ${e.kind} event handler failed: ${(err as Error)?.message ?? err}`);
      }
    }
  }

  private failed(err: unknown): void {
    if (this.down || this.closed) return;
    this.down = true;
    this.log.warn(
      `Cluster bus: Redis unavailable (${(err as Error)?.message ?? err}); until it is back, other nodes' writes reach this node's caches within their TTLs (5 s for keys and policies, 30 s for spend)`,
    );
  }

  private recovered(): void {
    if (!this.down || !this.connected) return;
    this.down = false;
    this.log.info('Cluster bus: Redis is back; invalidations and spend are shared between nodes again');
  }
}
