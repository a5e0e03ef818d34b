/**
 * The usage taps of OpenAI's own wires (pass-through lanes): Chat Completions, Responses and
 * Embeddings answers and stream events → canonical usage, the finish reason and the answer's id.
 */
import type { Usage } from '../../formats/chat.js';
import type { SseEvent } from '../../formats/sse.js';
import { hasKeyWith, stringValue, stringValuesLength, utf16Length } from '../../formats/sse-bytes.js';
import { type ErrorShape, nonEmpty, obj } from '../errors.js';
import { type EventTap, eventJson, type TapRead } from '../lane.js';
import type { Tapped } from '../types.js';
import { openAiErrors, throwIfErrorPayload } from './errors.js';
import { mapResponsesUsage, mapUsage, withCitedSearch } from './wire.js';

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
  const mapped = mapUsage(r.usage) ?? null;
  // A web search OpenAI ran for a chat answer shows only as the pages it cites (withCitedSearch).
  const cited =
    Array.isArray(obj(choice.message).annotations) && (obj(choice.message).annotations as []).length > 0;
  const usage = mapped && cited ? withCitedSearch(mapped) : mapped;
  return {
    usage,
    finishReason: nonEmpty(choice.finish_reason) ?? null,
    responseId: nonEmpty(r.id) ?? null,
    // A legacy completion's answer is its `text`.
    outputChars: usage ? 0 : String(obj(choice.message).content ?? choice.text ?? '').length,
  };
}

/**
 * A Chat Completions stream: every chunk is read (the finish reason and the usage chunk can come
 * in any of them); `[DONE]` ends it. Servers that close without `[DONE]` end it with a finish
 * reason seen (the hub's rule).
 */
export function chatStreamTap(secrets: Secrets, shape: ErrorShape = openAiErrors): EventTap {
  let finished = false;
  let idSeen = false;
  let cited = false;
  const tap = (ev: SseEvent): TapRead => {
    const data = ev.data.trim();
    if (data === '[DONE]') return { done: true };
    if (!data) return undefined;
    const chunk = eventJson(ev);
    throwIfErrorPayload(chunk, secrets, ev.event === 'error', shape);
    const r = obj(chunk);
    const out: NonNullable<TapRead> = {};
    if (Array.isArray(r.choices))
      for (const c of r.choices) {
        const annotations = obj(obj(c).delta).annotations;
        if (Array.isArray(annotations) && annotations.length) cited = true;
      }
    const usage = mapUsage(r.usage);
    if (usage) {
      out.usage = cited ? withCitedSearch(usage) : usage;
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
        if (typeof choice.text === 'string') chars += choice.text.length;
        if (delta.tool_calls) chars += JSON.stringify(delta.tool_calls).length;
      }
      if (chars > 0) out.outputChars = chars;
    }
    if (typeof r.id === 'string') {
      out.responseId = r.id;
      // Azure's first chunk (its prompt filter results) has an empty id: the next one is read too.
      if (r.id) idSeen = true;
    }
    return out;
  };
  // A chunk is read from its bytes (its id, finish reason and content's length); a chunk that may
  // carry anything else the tap reads (usage, tool calls, an error; a named event) is parsed. A key's
  // quotes match only where it is a key: inside a JSON string they are escaped.
  const skim = (name: string | undefined, data: Buffer): TapRead | null => {
    if (name !== undefined) return null;
    if (data.length < 16) return data.equals(DONE) ? { done: true } : null;
    const text = data.toString('latin1');
    // A citation (`"annotations": [{…`) makes the usage count a search: parsed too.
    if (
      hasKeyWith(text, USAGE, OBJECT) ||
      text.includes(ERROR) ||
      text.includes(TOOL_CALLS) ||
      (!cited && hasKeyWith(text, ANNOTATIONS, ARRAY) && !text.includes(EMPTY_ANNOTATIONS))
    )
      return null;
    const out: NonNullable<TapRead> = {};
    if (!idSeen) {
      // Without tool calls, a chunk's only `"id"` is its own.
      const id = stringValue(text, ID);
      if (!id) return null;
      out.responseId = id;
      idSeen = true;
    }
    const reason = stringValue(text, FINISH_REASON, true);
    if (reason) {
      out.finishReason = reason;
      finished = true;
    }
    // A legacy completion's chunk carries its text as `text`.
    const chars =
      stringValuesLength(text, CONTENT) +
      (text.includes(TEXT_COMPLETION) ? stringValuesLength(text, TEXT) : 0);
    if (chars > 0) out.outputChars = chars;
    return out;
  };
  return Object.assign(tap, { finished: () => finished, skim });
}

const DONE = Buffer.from('[DONE]');
const ID = '"id"';
const USAGE = '"usage"';
const FINISH_REASON = '"finish_reason"';
const ERROR = '"error"';
const TOOL_CALLS = '"tool_calls"';
const CONTENT = '"content"';
const TEXT = '"text"';
const TEXT_COMPLETION = '"text_completion"';
const OBJECT = 0x7b;
const ARRAY = 0x5b;
const ANNOTATIONS = '"annotations"';
const EMPTY_ANNOTATIONS = '"annotations":[]';

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
  const tap = (ev: SseEvent): TapRead => {
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
  // Deltas are measured from their bytes; the events the tap parses are read whole.
  const skim = (name: string | undefined, data: Buffer): TapRead | null => {
    if (name?.endsWith('.delta')) return { outputChars: utf16Length(data) };
    return name !== undefined && PARSED.has(name) ? null : undefined;
  };
  return Object.assign(tap, { skim });
}

/** The Responses events its tap parses. */
const PARSED = new Set([
  'response.created',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
  'error',
]);
