import type { ChatChunk, ChatResponse } from '../formats/chat.js';
import { sseJson } from '../formats/sse.js';
import type { AnswerChannel, AnswerScan } from '../guardrails/answer-filter.js';
import { chatAnswerSlots, chatChunkSlots } from '../inference/wires/texts.js';
import { forbidden } from '../lib/errors.js';
import { frameEvents } from '../providers/lane.js';
import type { ForwardedJson, RelayFrame } from '../providers/types.js';
import type { AnswerSlot, CallWire } from './call.js';
import type { Outcome } from './records.js';

/**
 * Content filters on the model's answer, applied by the engine after the provider answered and
 * before the generation is recorded (with the filters' results); a blocked answer is still recorded
 * and billed: the provider did the work. A lane's answer is read through
 * its wire's walkers, a translated one in the canonical chat shape. `block` becomes a 403 in the
 * caller's format (a whole answer) or the stream's error event (a stream).
 */

export const blockedBy = (scan: AnswerScan) => forbidden(`Blocked by content filter: ${scan.blocked?.label}`);

/**
 * How a blocked answer is recorded, whole or streamed alike: what the caller got (the 403 and its
 * message, a stream's error event carrying them) and OpenAI's `content_filter` finish reason.
 */
export function blockedOutcome(
  scan: AnswerScan,
): Pick<Outcome, 'status' | 'httpStatus' | 'error' | 'finishReason'> {
  const err = blockedBy(scan);
  return { status: 'error', httpStatus: err.status, error: err.message, finishReason: 'content_filter' };
}

/** Filters every text of `slots` whole; true when one changed. */
function filterWhole(scan: AnswerScan, slots: readonly AnswerSlot[]): boolean {
  let changed = false;
  for (const s of slots) {
    const out = scan.whole(s.text);
    if (out !== s.text) {
      s.set(out);
      changed = true;
    }
  }
  return changed;
}

/** An answer as the engine holds it before it is recorded: the lane's forwarded JSON, or a translated response. */
export type WholeAnswer = { lane: true; forwarded: ForwardedJson } | { lane: false; response: ChatResponse };

/**
 * A whole answer with its texts filtered. It does not refuse a blocked answer: the engine records
 * the generation with the filters' results first, then refuses it (`blockedBy`).
 */
export function filterAnswer<A extends WholeAnswer>(wire: CallWire, scan: AnswerScan, answer: A): A {
  if (answer.lane) {
    const json = structuredClone(answer.forwarded.json);
    const changed = filterWhole(scan, wire.answerTexts?.(json) ?? []);
    return changed
      ? { ...answer, forwarded: { ...answer.forwarded, json, text: JSON.stringify(json) } }
      : answer;
  }
  const response = structuredClone(answer.response);
  return filterWhole(scan, chatAnswerSlots(response)) ? { ...answer, response } : answer;
}

/**
 * A stream's items with their texts filtered as they go. The last item carrying a delta is held
 * until the next item shows whether its text goes on (it then carries what the filters let out so
 * far) or ended (it then carries the rest too): the caller gets every character, at most one item
 * and HOLD_BACK characters late.
 */
async function* filterItems<T>(
  source: AsyncIterable<T>,
  scan: AnswerScan,
  slotsOf: (item: T) => AnswerSlot[],
  emit: (item: T, changed: boolean) => T,
): AsyncGenerator<T> {
  const channels = new Map<string, AnswerChannel>();
  const channel = (key: string) => {
    let ch = channels.get(key);
    if (!ch) {
      ch = scan.channel();
      channels.set(key, ch);
    }
    return ch;
  };
  // `changed`: the item's whole texts were rewritten already.
  let held: { item: T; slot: AnswerSlot; channel: string; out: string; changed: boolean } | null = null;
  const release = (ended: boolean): T => {
    const h = held as NonNullable<typeof held>;
    held = null;
    const text = ended ? h.out + channel(h.channel).end() : h.out;
    const changed = text !== h.slot.text;
    if (changed) h.slot.set(text);
    return emit(h.item, changed || h.changed);
  };
  for await (const item of source) {
    const slots = slotsOf(item);
    const deltas = slots.filter((s) => s.channel !== undefined);
    if (held) {
      const h: { channel: string } = held;
      const released = release(!deltas.some((d) => d.channel === h.channel));
      if (scan.blocked) throw blockedBy(scan);
      yield released;
    }
    let changed = filterWhole(
      scan,
      slots.filter((s) => s.channel === undefined),
    );
    const outs = deltas.map((d) => channel(d.channel as string).push(d.text));
    if (scan.blocked) throw blockedBy(scan);
    if (deltas.length === 1) {
      held = {
        item,
        slot: deltas[0] as AnswerSlot,
        channel: deltas[0]?.channel as string,
        out: outs[0] ?? '',
        changed,
      };
      continue;
    }
    for (const [i, d] of deltas.entries()) {
      if (outs[i] !== d.text) {
        d.set(outs[i] as string);
        changed = true;
      }
    }
    yield emit(item, changed);
  }
  if (held) {
    const released = release(true);
    if (scan.blocked) throw blockedBy(scan);
    yield released;
  }
}

/** The event name of an SSE frame (`event: …`), if it has one. */
const eventOf = (frame: string) => /^event: ?(.*)$/m.exec(frame)?.[1]?.trim();

/** The JSON data of an SSE frame, when the tap did not parse it. */
function dataOf(f: RelayFrame): unknown {
  if (f.json !== undefined) return f.json;
  const data = (f.frame as string)
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/** A lane's streamed frames with their texts filtered (through the wire's walker). */
export function filterFrames(
  wire: CallWire,
  scan: AnswerScan,
  source: AsyncIterable<RelayFrame>,
): AsyncIterable<RelayFrame> {
  const frameTexts = wire.frameTexts;
  if (!frameTexts) return source;
  return filterItems<RelayFrame>(
    (async function* () {
      // Each event's JSON is a copy the walkers may rewrite (a joined frame's events one by one).
      for await (const f of source)
        for (const e of frameEvents(f)) yield { ...e, json: structuredClone(dataOf(e)) };
    })(),
    scan,
    (f) => frameTexts(f.json),
    (f, changed) => (changed ? { ...f, frame: sseJson(f.json, eventOf(f.frame as string)) } : f),
  );
}

/** A translated stream's chunks with their texts filtered. */
export const filterChunks = (scan: AnswerScan, source: AsyncIterable<ChatChunk>): AsyncIterable<ChatChunk> =>
  filterItems<ChatChunk>(source, scan, chatChunkSlots, (c) => c);
