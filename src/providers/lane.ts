/**
 * What every adapter's pass-through lane shares: parsing a relayed JSON answer, and turning a
 * stream of upstream SSE events into relay frames with what a tap reads from each. Each adapter's
 * `lane.ts` says which events carry what.
 */
import { encodeSse, type SseEvent, sseEventsOf } from '../formats/sse.js';
import { type ByteEvent, SseByteSplitter } from '../formats/sse-bytes.js';
import type { CallSignal } from '../lib/call-abort.js';
import { type ApiCall, callStream, callWhole, sseEventBatches, toUpstreamError } from './http.js';
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
  /**
   * For a stream relayed as bytes: what the tap reads of an event from its name and data bytes
   * alone, or null when it must read the event itself (decoded, through the tap). Without it a
   * stream is relayed event by event.
   */
  skim?: (name: string | undefined, data: Buffer) => TapRead | null;
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
export async function forwardStream(
  call: ApiCall,
  tap: EventTap,
  bytes = false,
): Promise<AsyncIterable<RelayFrame>> {
  return relayStream(await callStream(call), call.signal, call.secrets, tap, bytes);
}

type Answer = Awaited<ReturnType<typeof callStream>>;

/** The relay of a stream whose answer arrived (`forwardStream`'s; bench/lane-relay.ts times it alone). */
export function relayStream(
  res: Answer,
  signal: CallSignal,
  secrets: Secrets,
  tap: EventTap,
  bytes: boolean,
): AsyncIterable<RelayFrame> {
  return bytes && tap.skim ? relayBytes(res, signal, secrets, tap) : relay(res, signal, secrets, tap);
}

/**
 * A lane's stream relayed as the upstream's bytes (`ForwardRequest.bytes`: nothing above reads its
 * events one by one): each read's bytes up to its last complete event leave as one frame, a Buffer
 * — not decoded, parsed and re-encoded. The tap skims each event (its name, its data's bytes) and
 * reads whole only those that carry what it needs (usage, the finish reason, an error); an event
 * it parsed for a wire to rewrite (`json`: the chat usage chunk, a Responses snapshot) leaves as a
 * frame of its own, as on the event path. An error event ends the stream after the events before it.
 */
async function* relayBytes(
  res: Answer,
  signal: CallSignal,
  secrets: Secrets,
  tap: EventTap,
): AsyncGenerator<RelayFrame> {
  const skim = tap.skim as NonNullable<EventTap['skim']>;
  const splitter = new SseByteSplitter();
  const body = res.body;
  let done = false;
  let tapFailed = false;
  try {
    for await (const chunk of body) {
      const batch = splitter.push(chunk);
      if (!batch) continue;
      const { bytes, events } = batch;
      const out: RelayFrame[] = [];
      let from = 0;
      let seen: RelayFrame = { frame: bytes };
      let ev: ByteEvent | undefined;
      try {
        for (ev of events) {
          const read =
            typeof ev.data === 'string' ? tap(decoded(ev)) : (skim(ev.name, ev.data) ?? tap(decoded(ev)));
          if (!read) continue;
          const { done: last, ...what } = read;
          if (last) done = true;
          if (what.json === undefined) {
            merge(seen, what);
            continue;
          }
          if (ev.start > from) out.push({ ...seen, frame: bytes.subarray(from, ev.start) });
          out.push({ frame: encodeSse(decoded(ev)), ...what });
          from = ev.end;
          seen = { frame: bytes };
        }
      } catch (err) {
        // An error event: the events before it still go out, then the failure.
        tapFailed = true;
        if (ev && ev.start > from) out.push({ ...seen, frame: bytes.subarray(from, ev.start) });
        yield* out;
        throw err;
      }
      if (bytes.length > from) out.push({ ...seen, frame: from === 0 ? bytes : bytes.subarray(from) });
      yield* out;
    }
  } catch (err) {
    throw tapFailed ? err : toUpstreamError(err, signal, secrets);
  } finally {
    body.release();
  }
  if (!done && !tap.finished?.())
    throw new UpstreamError(502, 'upstream stream ended before its last event', { retryable: true });
}

async function* relay(
  res: Answer,
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
  let text = '';
  let chars = 0;
  for (const f of frames) {
    text += f.frame as string;
    if (f.usage) out.usage = f.usage;
    if (f.finishReason) out.finishReason = f.finishReason;
    if (f.responseId) out.responseId = f.responseId;
    if (f.outputChars) chars += f.outputChars;
  }
  out.frame = text;
  if (chars > 0) out.outputChars = chars;
  return out;
}

/** A byte event as the tap reads it. */
const decoded = (ev: ByteEvent): SseEvent => ({
  event: ev.name,
  data: typeof ev.data === 'string' ? ev.data : ev.data.toString('utf8'),
});

/** What a tap read of one more event, into what a frame carries (the latest of each, the characters summed). */
function merge(into: RelayFrame, read: Omit<RelayFrame, 'frame'>): void {
  if (read.usage) into.usage = read.usage;
  if (read.finishReason) into.finishReason = read.finishReason;
  if (read.responseId) into.responseId = read.responseId;
  if (read.outputChars) into.outputChars = (into.outputChars ?? 0) + read.outputChars;
}

/**
 * A frame's events one by one: a joined frame's parts, a frame relayed as bytes decoded and split
 * (for the readers that need each event: the content filters, the content log).
 */
export function frameEvents(f: RelayFrame): RelayFrame[] {
  if (f.parts) return f.parts;
  if (typeof f.frame === 'string') return [f];
  return sseEventsOf(f.frame.toString('utf8')).map((ev) => ({ frame: encodeSse(ev) }));
}

/** JSON.parse of an event's data; invalid → UpstreamError (a broken stream, as the hub treats it). */
export function eventJson(ev: SseEvent): unknown {
  try {
    return JSON.parse(ev.data);
  } catch {
    throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
  }
}
