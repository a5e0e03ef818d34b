/**
 * The usage tap of Anthropic's own wire (pass-through lanes): what a Messages answer or stream
 * event says about usage, the stop reason and the message id. Usage is canonical (prompt = input +
 * cache reads + cache writes, as `mapAnthropicUsage` counts it for translated calls).
 */
import type { SseEvent } from '../../formats/sse.js';
import { utf16Length } from '../../formats/sse-bytes.js';
import { extended } from '../../lib/objects.js';
import { obj } from '../errors.js';
import { type EventTap, eventJson, type TapRead } from '../lane.js';
import type { Tapped } from '../types.js';
import { anthropicStreamError } from './errors.js';
import { mapAnthropicUsage } from './wire.js';

const text = (x: unknown) => (typeof x === 'string' ? x : null);

/** A whole Messages answer (or a count_tokens answer: its input tokens are the usage). */
export function tapMessage(json: unknown, secrets: (string | null | undefined)[]): Tapped {
  const m = obj(json);
  if (m.type === 'error') throw anthropicStreamError(json, secrets);
  if (typeof m.input_tokens === 'number' && m.type === undefined) {
    return { usage: null, finishReason: null, responseId: null, outputChars: 0 };
  }
  return {
    usage: m.usage ? mapAnthropicUsage(m.usage) : null,
    finishReason: text(m.stop_reason),
    responseId: text(m.id),
    // Only for an estimate when no usage came (Anthropic always sends it).
    outputChars: m.usage || !Array.isArray(m.content) ? 0 : JSON.stringify(m.content).length,
  };
}

/**
 * A Messages stream, event by event. Usage arrives in `message_start` (input and cache counts) and
 * `message_delta` (cumulative output, and the input counts again in newer API versions): the tap
 * keeps the latest of each field. Content deltas are only measured, never parsed.
 */
export function messagesStreamTap(secrets: (string | null | undefined)[]): EventTap {
  let raw: Record<string, unknown> = {};
  const tap = (ev: SseEvent): TapRead => {
    switch (ev.event) {
      case 'content_block_delta':
        return { outputChars: ev.data.length };
      case 'message_start': {
        const message = obj(obj(eventJson(ev)).message);
        raw = { ...obj(message.usage) };
        return {
          usage: mapAnthropicUsage(raw),
          ...(text(message.id) ? { responseId: text(message.id) as string } : {}),
        };
      }
      case 'message_delta': {
        const d = obj(eventJson(ev));
        raw = extended(raw, obj(d.usage));
        const stop = text(obj(d.delta).stop_reason);
        return { usage: mapAnthropicUsage(raw), ...(stop ? { finishReason: stop } : {}) };
      }
      case 'message_stop':
        return { done: true };
      case 'error':
        throw anthropicStreamError(eventJson(ev), secrets);
      default:
        return undefined;
    }
  };
  // Only the events carrying usage, the stop reason or an error are decoded; deltas are measured.
  const skim = (name: string | undefined, data: Buffer): TapRead | null => {
    if (name === 'content_block_delta') return { outputChars: utf16Length(data) };
    if (name === 'message_start' || name === 'message_delta' || name === 'message_stop' || name === 'error')
      return null;
    return undefined;
  };
  return Object.assign(tap, { skim });
}
