/**
 * What every adapter's pass-through lane shares: parsing a relayed JSON answer, and turning a
 * stream of upstream SSE events into relay frames with what a tap reads from each. Each adapter's
 * `lane.ts` says which events carry what.
 */
import { encodeSse, type SseEvent } from '../formats/sse.js';
import type { CallSignal } from '../lib/call-abort.js';
import { type ApiCall, callStream, callWhole, sseEventBatches } from './http.js';
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
 * A lane's stream: each upstream event relayed as an SSE frame (its text as received, only
 * re-framed), with what the tap read. The events of one upstream read that the tap parsed nothing
 * of (`json`) leave as one frame — their texts joined, what the tap read of them merged, each in
 * `parts` — so that a read makes one pass through the layers above, not one per event; an event
 * whose JSON was parsed (a usage chunk a wire rewrites, a response snapshot) is a frame of its own.
 * A stream that ends before the tap saw it complete was cut short → UpstreamError(502), which the
 * engine reports to the caller in its own format.
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
  for await (const events of sseEventBatches(res, signal, secrets)) {
    const out: RelayFrame[] = [];
    let merged: RelayFrame[] = [];
    try {
      for (const ev of events) {
        const read = tap(ev);
        const frame = encodeSse(ev);
        if (!read) {
          merged.push({ frame });
          continue;
        }
        const { done: last, ...seen } = read;
        if (last) done = true;
        if (seen.json === undefined) {
          merged.push({ frame, ...seen });
          continue;
        }
        if (merged.length > 0) out.push(joined(merged));
        merged = [];
        out.push({ frame, ...seen });
      }
    } catch (err) {
      // An error event: what came before it in the read still goes out, then the failure.
      if (merged.length > 0) out.push(joined(merged));
      yield* out;
      throw err;
    }
    if (merged.length > 0) out.push(joined(merged));
    yield* out;
  }
  if (!done && !tap.finished?.())
    throw new UpstreamError(502, 'upstream stream ended before its last event', { retryable: true });
}

/** Consecutive frames as one: their texts joined, the latest of what was read, the characters summed. */
function joined(frames: RelayFrame[]): RelayFrame {
  if (frames.length === 1) return frames[0] as RelayFrame;
  const out: RelayFrame = { frame: '', parts: frames };
  let chars = 0;
  for (const f of frames) {
    out.frame += f.frame;
    if (f.usage) out.usage = f.usage;
    if (f.finishReason) out.finishReason = f.finishReason;
    if (f.responseId) out.responseId = f.responseId;
    if (f.outputChars) chars += f.outputChars;
  }
  if (chars > 0) out.outputChars = chars;
  return out;
}

/** JSON.parse of an event's data; invalid → UpstreamError (a broken stream, as the hub treats it). */
export function eventJson(ev: SseEvent): unknown {
  try {
    return JSON.parse(ev.data);
  } catch {
    throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
  }
}
