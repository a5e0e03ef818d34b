/**
 * The usage taps of OpenAI's own wires (pass-through lanes): Chat Completions, Responses and
 * Embeddings answers and stream events → canonical usage, the finish reason and the answer's id.
 */
import type { Usage } from '../../formats/chat.js';
import type { SseEvent } from '../../formats/sse.js';
import { type ErrorShape, nonEmpty, obj } from '../errors.js';
import { type EventTap, eventJson, type TapRead } from '../lane.js';
import type { Tapped } from '../types.js';
import { openAiErrors, throwIfErrorPayload } from './errors.js';
import { mapResponsesUsage, mapUsage } from './wire.js';

type Secrets = (string | null | undefined)[];

/**
 * A Responses answer's usage (canonical), with the web searches it ran: OpenAI reports each as a
 * `web_search_call` output item, not in the usage.
 */
function responsesUsage(response: Record<string, unknown>): Usage | null {
  const usage = mapResponsesUsage(response.usage);
  if (!usage) return null;
  const searches = Array.isArray(response.output)
    ? response.output.filter((item) => obj(item).type === 'web_search_call').length
    : 0;
  return searches ? { ...usage, server_tool_use: { web_search_requests: searches } } : usage;
}

/** A whole Chat Completions (or Embeddings) answer. */
export function tapChat(json: unknown, secrets: Secrets, shape: ErrorShape = openAiErrors): Tapped {
  throwIfErrorPayload(json, secrets, false, shape);
  const r = obj(json);
  const choice = obj(Array.isArray(r.choices) ? r.choices[0] : undefined);
  const usage = mapUsage(r.usage) ?? null;
  return {
    usage,
    finishReason: nonEmpty(choice.finish_reason) ?? null,
    responseId: nonEmpty(r.id) ?? null,
    outputChars: usage ? 0 : String(obj(choice.message).content ?? '').length,
  };
}

/**
 * A Chat Completions stream: every chunk is read (the finish reason and the usage chunk can come
 * in any of them); `[DONE]` ends it. Servers that close without `[DONE]` end it with a finish
 * reason seen (the hub's rule).
 */
export function chatStreamTap(secrets: Secrets, shape: ErrorShape = openAiErrors): EventTap {
  let finished = false;
  const tap = (ev: SseEvent): TapRead => {
    const data = ev.data.trim();
    if (data === '[DONE]') return { done: true };
    if (!data) return undefined;
    const chunk = eventJson(ev);
    throwIfErrorPayload(chunk, secrets, ev.event === 'error', shape);
    const r = obj(chunk);
    const out: NonNullable<TapRead> = {};
    const usage = mapUsage(r.usage);
    if (usage) {
      out.usage = usage;
      out.json = chunk;
    }
    if (Array.isArray(r.choices)) {
      let chars = 0;
      for (const c of r.choices) {
        const choice = obj(c);
        const reason = nonEmpty(choice.finish_reason);
        if (reason) {
          out.finishReason = reason;
          finished = true;
        }
        const delta = obj(choice.delta);
        if (typeof delta.content === 'string') chars += delta.content.length;
        if (delta.tool_calls) chars += JSON.stringify(delta.tool_calls).length;
      }
      if (chars > 0) out.outputChars = chars;
    }
    if (typeof r.id === 'string') out.responseId = r.id;
    return out;
  };
  return Object.assign(tap, { finished: () => finished });
}

/** A whole Responses answer. */
export function tapResponse(json: unknown, secrets: Secrets, shape: ErrorShape = openAiErrors): Tapped {
  throwIfErrorPayload(json, secrets, false, shape);
  const r = obj(json);
  const usage = responsesUsage(r);
  return {
    usage,
    finishReason: nonEmpty(r.status) ?? null,
    responseId: nonEmpty(r.id) ?? null,
    outputChars: usage ? 0 : JSON.stringify(r.output ?? '').length,
  };
}

/**
 * A Responses stream: the response's id from `response.created`, usage and status from its
 * terminal event (`response.completed` / `response.incomplete`); `response.failed` and `error`
 * events are failures. Deltas are measured, not parsed.
 */
export function responsesStreamTap(secrets: Secrets, shape: ErrorShape = openAiErrors): EventTap {
  return (ev: SseEvent): TapRead => {
    const type = ev.event ?? '';
    if (type.endsWith('.delta')) return { outputChars: ev.data.length };
    switch (type) {
      // The events carrying the response object are parsed whole (callers may add to them).
      case 'response.created':
      case 'response.in_progress': {
        const json = eventJson(ev);
        const id = nonEmpty(obj(obj(json).response).id);
        return { json, ...(id ? { responseId: id } : {}) };
      }
      case 'response.completed':
      case 'response.incomplete': {
        const json = eventJson(ev);
        const response = obj(obj(json).response);
        const usage = responsesUsage(response);
        const finishReason = nonEmpty(response.status) ?? type.slice(9);
        return { json, ...(usage ? { usage } : {}), finishReason, done: true };
      }
      case 'response.failed': {
        const response = obj(obj(eventJson(ev)).response);
        throwIfErrorPayload(
          { error: response.error ?? { message: 'the response failed' } },
          secrets,
          false,
          shape,
        );
        return undefined;
      }
      case 'error':
        throwIfErrorPayload({ error: eventJson(ev) }, secrets, true, shape);
        return undefined;
      default:
        return undefined;
    }
  };
}
