import { Type } from '@sinclair/typebox';
import type { ChatChunk } from '../../formats/chat.js';
import { chatRequestFromBody } from '../../formats/chat-edge.js';
import { lanePlugins, lanePluginsDropped, withPlugins } from '../../formats/plugins.js';
import { sseJson } from '../../formats/sse.js';
import { laneSearchDropped, laneWebSearch } from '../../formats/web-search.js';
import { ApiError } from '../../lib/errors.js';
import { extended } from '../../lib/objects.js';
import { effortFromReasoning } from '../../providers/openai/wire.js';
import type { RelayFrame } from '../../providers/types.js';
import type { Body, RouteInfo, TextSlot } from '../../routing/call.js';
import type { Streaming } from '../../routing/engine.js';
import { costOf } from '../../routing/pricing.js';
import { envelope } from '../../server/errors.js';
import {
  decorateChatResponse,
  decorateChunk,
  fullUsage,
  gatewayMetadata,
  withProviderAndCost,
} from '../decorate.js';
import { withFinalUsage } from './final-usage.js';
import {
  chatAnswerSlots,
  chatChunkSlots,
  contentSlots,
  formatSlots,
  isObj,
  roleOf,
  stringSlot,
  toolSlots,
} from './texts.js';
import {
  type ChatWire,
  GATEHOUSE_FIELDS,
  inspectBody,
  laneDroppedHeaders,
  withAnthropicBeta,
  withoutFields,
} from './wire.js';

const NULL_USAGE = /,"usage":null|"usage":null,/g;
const NULL_USAGE_BYTES = Buffer.from('"usage":null');

/** A frame's text without `"usage":null` (a Buffer's bytes spliced, not decoded). */
function withoutNullUsage(frame: string | Buffer): string | Buffer {
  if (typeof frame === 'string')
    return frame.includes('"usage":null') ? frame.replace(NULL_USAGE, '') : frame;
  let at = frame.indexOf(NULL_USAGE_BYTES);
  if (at === -1) return frame;
  const kept: Buffer[] = [];
  let from = 0;
  const n = NULL_USAGE_BYTES.length;
  while (at !== -1) {
    // As NULL_USAGE: the comma before it, else the one after it, goes with it.
    if (frame[at - 1] === 0x2c && at - 1 >= from) {
      kept.push(frame.subarray(from, at - 1));
      from = at + n;
    } else if (frame[at + n] === 0x2c) {
      kept.push(frame.subarray(from, at));
      from = at + n + 1;
    }
    at = frame.indexOf(NULL_USAGE_BYTES, at + n);
  }
  kept.push(frame.subarray(from));
  return Buffer.concat(kept);
}

/**
 * A relayed OpenAI-format stream frame (Chat Completions', legacy Completions'): its usage chunk
 * re-serialized with the cost and the provider added, any other as it came without `"usage":null`.
 */
export function relayUsageFrame(frame: RelayFrame, info: RouteInfo): string | Buffer {
  if (frame.usage && isObj(frame.json)) {
    const cost = costOf(info.served.endpoint.pricing, frame.usage);
    const usage = fullUsage(frame.usage, cost, info.served.credential.isByok);
    const prior = isObj(frame.json.usage) ? frame.json.usage : {};
    return sseJson(
      extended(frame.json, { provider: info.served.endpoint.provider, usage: extended(prior, usage) }),
    );
  }
  return withoutNullUsage(frame.frame);
}

/**
 * A translated stream in an OpenAI format (Chat Completions', legacy Completions'): each chunk as
 * `shape` makes it, the usage chunk priced, a failure after the start ended by the format's
 * `errorFrames`, then `[DONE]`.
 */
export async function* openAiFormatStream(
  s: Streaming & { lane: false },
  shape: (chunk: ChatChunk) => Record<string, unknown>,
  errorFrames: (info: RouteInfo, code: number, message: string) => string[],
): AsyncGenerator<string> {
  const { info } = s;
  try {
    for await (const chunk of withFinalUsage(s)) {
      const out = shape(chunk);
      if (!chunk.usage) {
        yield sseJson(out);
        continue;
      }
      const cost = costOf(info.served.endpoint.pricing, chunk.usage);
      yield sseJson({ ...out, usage: fullUsage(chunk.usage, cost, info.served.credential.isByok) });
    }
  } catch (err) {
    const e = err instanceof ApiError ? err : null;
    yield* errorFrames(info, e?.status ?? 502, (err as Error).message || 'Upstream stream failed');
    return;
  }
  yield 'data: [DONE]\n\n';
}

/** OpenRouter's request extensions a provider's Chat Completions API does not take. */
const DROPPED = [...GATEHOUSE_FIELDS, 'usage', 'reasoning'] as const;

/**
 * Message texts and names, assistant tool-call arguments, tools (descriptions and parameter
 * schemas), the `response_format` schema.
 */
function texts(body: Body): TextSlot[] {
  const out: TextSlot[] = [];
  if (Array.isArray(body.messages))
    for (const m of body.messages) {
      if (!isObj(m)) continue;
      const role = roleOf(m.role);
      stringSlot(out, role, m, 'name');
      contentSlots(out, role, m);
      if (Array.isArray(m.tool_calls))
        for (const tc of m.tool_calls)
          if (isObj(tc) && isObj(tc.function)) stringSlot(out, 'assistant', tc.function, 'arguments');
    }
  toolSlots(out, body);
  formatSlots(out, body.response_format);
  return out;
}

/**
 * OpenRouter's `reasoning` as OpenAI's effort: its `effort`, else its `max_tokens` budget mapped as
 * a translated call maps it (OpenAI takes no budget; the OpenRouter AI SDK provider sends one).
 */
function laneEffort(reasoning: unknown): string | undefined {
  if (!isObj(reasoning)) return undefined;
  if (typeof reasoning.effort === 'string') return reasoning.effort;
  if (typeof reasoning.max_tokens !== 'number') return undefined;
  return effortFromReasoning({ max_tokens: reasoning.max_tokens });
}

/**
 * A lane's body: OpenRouter's `reasoning` becomes OpenAI's `reasoning_effort`, its web search (the
 * `web` plugin, the `openrouter:web_search` tool) OpenAI's `web_search_options`, and a stream asks
 * for its usage chunk (the gateway bills from it; OpenRouter's answers always end with one).
 */
function laneBody(body: Body, upstreamModel: string): Body {
  const out = laneWebSearch(withoutFields(lanePlugins(body, 'chat'), upstreamModel, DROPPED), 'chat');
  if (hasBreakpoints(body)) {
    delete out.cache_control;
    out.messages = (body.messages as unknown[]).map(withoutBreakpoints);
  }
  if (Array.isArray(out.tools))
    out.tools = out.tools.map((t) => {
      if (!isObj(t) || !('eager_input_streaming' in t)) return t;
      const { eager_input_streaming: _, ...tool } = t;
      return tool;
    });
  const effort = laneEffort(body.reasoning);
  if (effort && out.reasoning_effort === undefined) out.reasoning_effort = effort;
  if (body.stream === true)
    out.stream_options = { ...(isObj(body.stream_options) ? body.stream_options : {}), include_usage: true };
  return out;
}

/**
 * OpenRouter's `cache_control` breakpoints (on the body, a message, a content part) steer
 * Anthropic's and Gemini's caches; OpenAI-format providers cache by themselves and OpenAI refuses
 * the field, so a lane leaves them out and reports them dropped.
 */
function hasBreakpoints(body: Body): boolean {
  if (body.cache_control !== undefined) return true;
  if (!Array.isArray(body.messages)) return false;
  return body.messages.some(
    (m) =>
      isObj(m) &&
      (m.cache_control !== undefined ||
        (Array.isArray(m.content) && m.content.some((p) => isObj(p) && p.cache_control !== undefined))),
  );
}

function withoutBreakpoints(m: unknown): unknown {
  if (!isObj(m)) return m;
  const { cache_control: _, ...rest } = m;
  if (!Array.isArray(rest.content)) return rest;
  rest.content = rest.content.map((p) => {
    if (!isObj(p) || p.cache_control === undefined) return p;
    const { cache_control: __, ...part } = p;
    return part;
  });
  return rest;
}

/**
 * The paths of tools asking for OpenRouter's `eager_input_streaming` (Anthropic's fine-grained tool
 * streaming): an OpenAI-format provider streams tool input as it always does and takes no such
 * field, so a lane leaves it out (`false` too) and reports the ones it drops.
 */
function eagerTools(body: Body): string[] {
  if (!Array.isArray(body.tools)) return [];
  return body.tools.flatMap((t, i) =>
    isObj(t) && t.eager_input_streaming === true ? [`tools[${i}].eager_input_streaming`] : [],
  );
}

/** A chunk of Gatehouse's own in a stream (not the provider's): the call's id, model and provider. */
const ownChunk = (info: RouteInfo, rest: Record<string, unknown>): string =>
  sseJson({
    id: info.generationId,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: info.model.id,
    provider: info.served.endpoint.provider,
    ...rest,
  });

/** The in-band error chunk that ends a stream which failed after it started, then `[DONE]`. */
function errorFrames(info: RouteInfo, code: number, message: string): string[] {
  return [
    ownChunk(info, {
      error: { code, message },
      choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
    }),
    'data: [DONE]\n\n',
  ];
}

/** `POST /chat/completions`: OpenAI's Chat Completions format, with OpenRouter's extensions. */
export const chatWire: ChatWire = {
  endpoint: 'chat',
  native: 'openai-chat',
  kind: 'chat',
  path: '/chat/completions',
  summary: 'Chat completion (OpenAI format), streaming or not',
  // `anthropic-beta` is for an Anthropic model's translated call (never sent on an OpenAI lane).
  forwardHeaders: ['openai-beta', 'anthropic-beta'],
  inspect: inspectBody,
  parse: (body, headers) => withPlugins(withAnthropicBeta(chatRequestFromBody(body), headers), body),
  texts,
  laneBody,
  laneDropped: (body, headers) => [
    ...(hasBreakpoints(body) ? ['cache_control'] : []),
    ...eagerTools(body),
    ...laneSearchDropped(body, 'chat'),
    ...lanePluginsDropped(body, 'chat'),
    ...laneDroppedHeaders(headers),
  ],
  answerTexts: chatAnswerSlots,
  frameTexts: chatChunkSlots,
  encodeResponse: (done, call) =>
    decorateChatResponse(done.response, done.info, done.usage, done.cost, call.echoUpstream),
  encodeStream: (s) => openAiFormatStream(s, (chunk) => decorateChunk(chunk, s.info), errorFrames),
  // The provider's own answer, with what OpenRouter's format adds to it (the provider, the cost,
  // how it was routed): nothing of the provider's is changed or lost.
  relayJson: (done, call) =>
    withProviderAndCost(done, {
      gateway_metadata: gatewayMetadata(done.info),
      safeguard_results: done.info.safeguards,
      ...(call.echoUpstream ? { debug: { echo_upstream_body: done.info.upstreamRequest } } : {}),
    }),
  // Only the usage chunk of a relayed stream is re-serialized (its cost added). OpenAI sends
  // `"usage":null` in every other chunk of a stream that asked for usage, which OpenRouter's format
  // (and its SDK's validation) leaves out: cut from the text, the chunk is otherwise as it came.
  relayFrame: relayUsageFrame,
  streamError: (info, message, status = 502) => errorFrames(info, status, message),
  // As OpenRouter opens such a stream: a chunk without choices, before the answer's.
  debugFrame: (info) => ownChunk(info, { choices: [], debug: { echo_upstream_body: info.upstreamRequest } }),
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
