/**
 * One connection of the Responses WebSocket mode: `response.create` events in, the events of the
 * same streamed call as `POST /responses` out (routes.ts `responsesTurn` and `streamFrames`: the
 * engine, stored responses, content logging and accounting are the HTTP path's), one response at
 * a time.
 *
 * The connection keeps its last response (its whole input and output) so that the next turn may
 * name it in `previous_response_id` and send only its new items, even with `store: false` — the
 * point of the mode for agent loops. That memory is the connection's own: another connection (or
 * an HTTP call) cannot reach it, and it is gone when the socket closes.
 */
import { randomUUID } from 'node:crypto';
import { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { tapStream } from '../content-log/tap.js';
import { CallAbort } from '../lib/call-abort.js';
import { nestsDeeperThan } from '../lib/json-depth.js';
import type { Body } from '../routing/call.js';
import type { Services } from '../services.js';
import { inputList } from '../stored-responses/expansion.js';
import { serveTraced } from '../telemetry/spans.js';
import { callOf, failed, responsesTurn, streamFrames, withPreset } from './routes.js';
import { errorEvent, errorOf, frameEvents, messageText, type SocketError } from './socket-events.js';
import type { SocketMetrics, TurnOutcome } from './socket-metrics.js';
import { WIRES } from './wires/index.js';
import { isObj } from './wires/texts.js';

export type SessionServices = Pick<
  Services,
  'engine' | 'contentLog' | 'storedResponses' | 'compaction' | 'keys' | 'presets' | 'inputFiles'
>;

/** The connection's last response: what a turn naming it continues from. */
interface Remembered {
  id: string;
  /** Its whole context: the input it was generated from (earlier turns included), then its output. */
  items: unknown[];
  /** Stored by Gatehouse: then it is continued as over HTTP (and from any connection). */
  stored: boolean;
}

/** Fields of `response.create` that are the socket's, not the Responses body's. */
const ENVELOPE = ['type', 'generate', 'stream'];
/** Above this many bytes queued on the socket, the next event waits for it to drain. */
const HIGH_WATER = 1 << 20;
const wire = WIRES.responses;

/**
 * An output item worth sending back: everything but a reasoning item without its encrypted state
 * (a provider could only look it up in a store that does not hold it).
 */
const resendable = (item: unknown) =>
  !isObj(item) || item.type !== 'reasoning' || typeof item.encrypted_content === 'string';

export class ResponsesSession {
  private inFlight: CallAbort | null = null;
  private last: Remembered | null = null;
  /** Why the socket closes once the response in flight is over (shutdown, age limit). */
  private closeAfter: { code: number; reason: string; error?: SocketError } | null = null;
  /** How the turn in flight ended, for the metrics: an error event unless its events say otherwise. */
  private outcome: TurnOutcome = 'error';

  constructor(
    private readonly socket: WebSocket,
    /** The upgrade request: its caller, headers and logger serve every turn. */
    private readonly req: FastifyRequest,
    private readonly services: SessionServices,
    private readonly metrics: SocketMetrics,
  ) {
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    // The client gone mid-response: the call is aborted, and recorded as an HTTP stream cut short is.
    socket.on('close', () => this.inFlight?.abort(new Error('client closed the connection')));
  }

  get busy(): boolean {
    return this.inFlight !== null;
  }

  /** Closes the socket now when idle, else once the response in flight is over. */
  closeWhenIdle(code: number, reason: string, error?: SocketError): void {
    this.closeAfter = { code, reason, error };
    if (!this.busy) this.closeNow();
  }

  /** Calls `closed` once the socket is closed. */
  onClosed(closed: () => void): void {
    if (this.socket.readyState === this.socket.CLOSED) closed();
    else this.socket.once('close', closed);
  }

  /** Cuts the socket (and so the call in flight). */
  terminate(): void {
    this.socket.terminate();
  }

  private closeNow(): void {
    const c = this.closeAfter;
    if (!c || this.socket.readyState !== this.socket.OPEN) return;
    if (c.error) this.socket.send(errorEvent(c.error));
    this.socket.close(c.code, c.reason);
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.closeAfter) return void this.fail({ status: 503, message: 'The connection is closing' });
    if (this.busy)
      return void this.fail({
        status: 409,
        code: 'response_already_in_flight',
        message: 'A response is in flight on this connection: send the next response.create after it ends',
      });
    let event: unknown;
    try {
      event = isBinary ? undefined : JSON.parse(messageText(data));
    } catch {}
    if (!isObj(event))
      return void this.fail({
        status: 400,
        code: 'invalid_json',
        message: 'Send each event as a JSON object',
      });
    if (event.type !== 'response.create')
      return void this.fail({
        status: 400,
        code: 'unknown_event_type',
        param: 'type',
        message: `Unknown event type ${JSON.stringify(event.type ?? null)}: send response.create`,
      });
    const start = performance.now();
    const refused = refusal(event);
    if (refused) {
      this.fail(refused);
      return void this.metrics.turn('error', (performance.now() - start) / 1000);
    }
    const abort = new CallAbort();
    this.inFlight = abort;
    this.outcome = 'error';
    const turn = this.stillAuthorized().then((ok) => {
      if (!ok) return;
      return event.generate === false ? this.warmUp(event) : this.respond(event, abort);
    });
    turn
      .catch((err) => {
        this.req.log.error({ err }, 'responses websocket turn failed');
        this.fail({ status: 500, message: 'Internal server error' });
      })
      .finally(() => {
        this.inFlight = null;
        this.metrics.turn(this.outcome, (performance.now() - start) / 1000);
        if (this.closeAfter) this.closeNow();
      });
  }

  /**
   * The handshake's key, checked again for each turn as each HTTP call checks it: a key disabled,
   * deleted or expired since the socket opened ends the connection (1008) with a 401 error event.
   */
  private async stillAuthorized(): Promise<boolean> {
    const caller = await this.services.keys.callerOf(this.req.caller.keyHash);
    if (caller) {
      this.req.caller = caller;
      return true;
    }
    this.closeAfter = {
      code: 1008,
      reason: 'key no longer valid',
      error: { status: 401, message: 'Invalid, disabled or expired API key' },
    };
    return false;
  }

  /** One `response.create`: the body as `POST /responses` takes it, streamed, in a SERVER span. */
  private async respond(event: Body, abort: CallAbort): Promise<void> {
    const { req } = this;
    const { body, continues } = this.continued(withoutEnvelope(event));
    req.body = { ...body, stream: true };
    await traceTurn(req, async () => {
      let started = false;
      try {
        const presetId = await withPreset(this.services, req, 'responses');
        const store = await responsesTurn(this.services, req);
        const context = inputList((req.body as Body).input) ?? [];
        const call = callOf(req, wire, abort);
        if (presetId) call.presetId = presetId;
        call.headers = withoutSocketBeta(call.headers);
        const { engine, contentLog } = this.services;
        const s = tapStream(contentLog, call, await engine.stream(call));
        started = true;
        let final: Record<string, unknown> | null = null;
        try {
          for await (const frame of streamFrames(wire, s, call, store)) {
            if (this.socket.readyState !== this.socket.OPEN) break;
            for (const text of frameEvents(frame)) {
              const out = this.outgoing(text, continues);
              if (out.final) final = out.final;
              const full = this.send(out.text);
              if (full) await full;
            }
          }
        } catch (err) {
          // The client left (the call was aborted): nothing to tell.
          if (this.socket.readyState !== this.socket.OPEN) {
            this.outcome = 'cancelled';
            return 499;
          }
          // Failed after it started: ended as the HTTP stream is, in the Responses format.
          this.outcome = 'failed';
          for (const frame of failed(wire, s.info, err))
            for (const text of frameEvents(frame)) this.send(text);
          return 502;
        }
        // The client left before the response's last event: logged and traced as an HTTP call
        // the client closed (499), as the metric counts it.
        if (this.outcome === 'error' && this.socket.readyState !== this.socket.OPEN) {
          this.outcome = 'cancelled';
          return 499;
        }
        if (final) this.remember(final, context);
        return 200;
      } catch (err) {
        if (started) throw err;
        const e = errorOf(err);
        if (!e) throw err;
        this.fail(e);
        return e.status;
      }
    });
  }

  /**
   * `generate: false`: the turn's state prepared (stored state it names expanded, the connection's
   * last response set) and answered with an empty completed response; no model is called, nothing
   * is billed or stored.
   */
  private async warmUp(event: Body): Promise<void> {
    const { req } = this;
    const { body, continues } = this.continued(withoutEnvelope(event));
    if (typeof body.model !== 'string' || !body.model)
      return this.fail({ status: 400, param: 'model', message: 'model: required' });
    req.body = body;
    try {
      await responsesTurn(this.services, req);
    } catch (err) {
      const e = errorOf(err);
      if (!e) throw err;
      return this.fail(e);
    }
    const response = {
      id: `resp_${randomUUID().replaceAll('-', '')}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: body.model,
      output: [],
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      store: false,
      previous_response_id: continues ?? body.previous_response_id ?? null,
    };
    this.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response }));
    this.send(JSON.stringify({ type: 'response.completed', sequence_number: 1, response }));
    this.outcome = 'completed';
    this.last = { id: response.id, items: inputList((req.body as Body).input) ?? [], stored: false };
  }

  /**
   * The body with the connection's last response put in when it names it and Gatehouse did not
   * store it (a stored one is expanded from the store, as over HTTP).
   */
  private continued(body: Body): { body: Body; continues: string | null } {
    const previous = body.previous_response_id;
    const own = inputList(body.input);
    if (!this.last || this.last.stored || previous !== this.last.id || own === null)
      return { body, continues: null };
    const { previous_response_id: _named, ...rest } = body;
    return { body: { ...rest, input: [...this.last.items, ...own] }, continues: this.last.id };
  }

  /**
   * An event as the socket sends it: a response snapshot of a turn continued from memory names the
   * response it continues (the HTTP path saw no previous_response_id); the final one is returned.
   */
  private outgoing(text: string, continues: string | null) {
    // Only the events carrying the response object are read (deltas pass untouched).
    if (!text.includes('"response":{')) return { text, final: null };
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      return { text, final: null };
    }
    if (!isObj(event) || !isObj(event.response)) return { text, final: null };
    const terminal = event.type === 'response.completed' || event.type === 'response.incomplete';
    if (terminal || event.type === 'response.failed') this.outcome = outcomeOf(event.type as string);
    if (continues === null) return { text, final: terminal ? event.response : null };
    event.response.previous_response_id = continues;
    return { text: JSON.stringify(event), final: terminal ? event.response : null };
  }

  private remember(response: Record<string, unknown>, context: unknown[]): void {
    if (typeof response.id !== 'string') return;
    const output = Array.isArray(response.output) ? response.output.filter(resendable) : [];
    this.last = { id: response.id, items: [...context, ...output], stored: response.store === true };
  }

  /** Sends an event; a promise when the socket's queue is full (resolved once it drained). */
  private send(text: string): Promise<void> | null {
    if (this.socket.readyState !== this.socket.OPEN) return null;
    if (this.socket.bufferedAmount < HIGH_WATER) {
      this.socket.send(text);
      return null;
    }
    return new Promise((resolve) => this.socket.send(text, () => resolve()));
  }

  private fail(e: SocketError): void {
    this.send(errorEvent(e));
  }
}

/** What the socket refuses of a `response.create` before any call, as OpenAI does. */
function refusal(event: Body): SocketError | null {
  if (nestsDeeperThan(event))
    return { status: 400, message: 'Invalid body: JSON nested deeper than the limit allows' };
  if (event.background === true)
    return { status: 400, param: 'background', message: 'background: not supported in WebSocket mode' };
  if (event.stream_id !== undefined && event.stream_id !== null)
    return {
      status: 400,
      param: 'stream_id',
      message: 'stream_id: one response at a time per connection; open another connection instead',
    };
  return null;
}

const outcomeOf = (type: string): TurnOutcome =>
  type === 'response.completed' ? 'completed' : type === 'response.incomplete' ? 'incomplete' : 'failed';

function withoutEnvelope(event: Body): Body {
  const body: Body = {};
  for (const [k, v] of Object.entries(event)) if (!ENVELOPE.includes(k)) body[k] = v;
  return body;
}

/**
 * The caller's OpenAI-Beta without the WebSocket mode's own beta (`responses_websockets=…`, which
 * Codex sends on the handshake): the call upstream is an HTTP stream.
 */
function withoutSocketBeta(headers: Record<string, string>): Record<string, string> {
  const beta = headers['openai-beta'];
  if (beta === undefined) return headers;
  const { 'openai-beta': _beta, ...rest } = headers;
  const kept = beta
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b && !b.startsWith('responses_websockets'));
  return kept.length ? { ...rest, 'openai-beta': kept.join(',') } : rest;
}

/**
 * Runs one turn as an HTTP call runs: in a SERVER span of its own (when tracing is on), ending with
 * the status `handle` returns (a response object stands in for the HTTP one), and with an access
 * line of its own (the status the HTTP call would have had).
 */
async function traceTurn(req: FastifyRequest, handle: () => Promise<number>): Promise<void> {
  const res = new ServerResponse(req.raw);
  const start = performance.now();
  try {
    res.statusCode = await serveTraced(
      req,
      { raw: res, log: req.log },
      req.routeOptions.url ?? req.url,
      handle,
    );
  } catch (err) {
    res.statusCode = 500;
    throw err;
  } finally {
    res.emit('close');
    req.log.info(
      { res: { statusCode: res.statusCode }, responseTime: performance.now() - start },
      'websocket turn completed',
    );
  }
}
