import type { ChatChunk, ChatResponse } from '../formats/chat.js';
import { sseJson } from '../formats/sse.js';
import type { AnswerChannel, AnswerScan } from '../guardrails/answer-filter.js';
import { chatAnswerSlots, chatChunkSlots } from '../inference/wires/texts.js';
import { forbidden } from '../lib/errors.js';
import type { RelayFrame } from '../providers/types.js';
import type { AnswerSlot, CallWire } from './call.js';
import type { Completed, Streaming } from './engine.js';

/**
 * Content filters on the model's answer, applied by the engine after the provider answered (the
 * call is recorded and billed first: the provider did the work). A lane's answer is read through
 * its wire's walkers, a translated one in the canonical chat shape. `block` becomes a 403 in the
 * caller's format (a whole answer) or the stream's error event (a stream).
 */

const blockedBy = (scan: AnswerScan) => forbidden(`Blocked by content filter: ${scan.blocked?.label}`);

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

/** A whole answer, its texts filtered and the response filters' results added to its safeguards. */
export function filterCompleted(
  wire: CallWire,
  scan: AnswerScan,
  done: Completed<ChatResponse>,
): Completed<ChatResponse> {
  let out: Completed<ChatResponse>;
  if (done.lane) {
    const json = structuredClone(done.forwarded.json);
    const changed = filterWhole(scan, wire.answerTexts?.(json) ?? []);
    out = changed ? { ...done, forwarded: { ...done.forwarded, json, text: JSON.stringify(json) } } : done;
  } else {
    const response = structuredClone(done.response);
    out = filterWhole(scan, chatAnswerSlots(response)) ? { ...done, response } : done;
  }
  if (scan.blocked) throw blockedBy(scan);
  return { ...out, info: { ...out.info, safeguards: [...out.info.safeguards, ...scan.results()] } };
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
  const data = f.frame
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

/** A streamed answer with its texts filtered (lane frames through the wire's walker). */
export function filterStreaming(wire: CallWire, scan: AnswerScan, s: Streaming): Streaming {
  if (s.lane) {
    const frameTexts = wire.frameTexts;
    if (!frameTexts) return s;
    const frames = filterItems<RelayFrame>(
      (async function* () {
        // Each event's JSON is a copy the walkers may rewrite (a joined frame's events one by one).
        for await (const f of s.frames)
          for (const e of f.parts ?? [f]) yield { ...e, json: structuredClone(dataOf(e)) };
      })(),
      scan,
      (f) => frameTexts(f.json),
      (f, changed) => (changed ? { ...f, frame: sseJson(f.json, eventOf(f.frame)) } : f),
    );
    return { ...s, frames };
  }
  const chunks = filterItems<ChatChunk>(s.chunks, scan, chatChunkSlots, (c) => c);
  return { ...s, chunks };
}
