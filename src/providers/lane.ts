/**
 * What every adapter's pass-through lane shares: parsing a relayed JSON answer, and turning a
 * stream of upstream SSE events into relay frames with what a tap reads from each. Each adapter's
 * `lane.ts` says which events carry what.
 */
import { encodeSse, type SseEvent } from '../formats/sse.js';
import type { CallSignal } from '../lib/call-abort.js';
import { type ApiCall, callStream, callWhole, sseEvents } from './http.js';
import { redact } from './redact.js';
import { type ForwardedJson, type RelayFrame, type Tapped, UpstreamError } from './types.js';

/** A JSON answer relayed as received, with what `tap` reads of it (invalid JSON → UpstreamError). */
export async function forwardJson(
  call: ApiCall,
  tap: (json: unknown, secrets: Secrets) => Tapped,
): Promise<ForwardedJson> {
  const res = await callWhole(call);
  let text: string;
  try {
    text = await res.body.text();
  } catch (err) {
    throw call.signal.aborted ? err : new UpstreamError(0, 'upstream answer cut off', { retryable: true });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UpstreamError(502, `upstream sent invalid JSON: ${redact(text.slice(0, 200), call.secrets)}`, {
      retryable: true,
    });
  }
  return { status: res.status, text, json, ...tap(json, call.secrets) };
}

type Secrets = (string | null | undefined)[];

/** What a tap read of one event; `done` marks the stream's last event. */
export type TapRead = (Omit<RelayFrame, 'frame'> & { done?: boolean }) | undefined;

/**
 * Reads one upstream event: returns what it saw (undefined: nothing but the frame) and throws
 * UpstreamError for an error event. `finished` says whether a stream that ends without its last
 * event is still complete (servers that close after the finish reason without `[DONE]`).
 */
export interface EventTap {
  (event: SseEvent): TapRead;
  finished?: () => boolean;
}

/**
 * A lane's stream: each upstream event relayed as one SSE frame (its text as received, only
 * re-framed), with what the tap read. A stream that ends before the tap saw it complete was cut
 * short → UpstreamError(502), which the engine reports to the caller in its own format.
 */
export async function forwardStream(call: ApiCall, tap: EventTap): Promise<AsyncIterable<RelayFrame>> {
  const res = await callStream(call);
  return relay(res, call.signal, call.secrets, tap);
}

async function* relay(
  res: Awaited<ReturnType<typeof callStream>>,
  signal: CallSignal,
  secrets: Secrets,
  tap: EventTap,
): AsyncGenerator<RelayFrame> {
  let done = false;
  for await (const ev of sseEvents(res, signal, secrets)) {
    const read = tap(ev);
    const frame = encodeSse(ev);
    if (read) {
      const { done: last, ...seen } = read;
      yield { frame, ...seen };
      if (last) done = true;
    } else yield { frame };
  }
  if (!done && !tap.finished?.())
    throw new UpstreamError(502, 'upstream stream ended before its last event', { retryable: true });
}

/** JSON.parse of an event's data; invalid → UpstreamError (a broken stream, as the hub treats it). */
export function eventJson(ev: SseEvent): unknown {
  try {
    return JSON.parse(ev.data);
  } catch {
    throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
  }
}
