import { Type } from '@sinclair/typebox';
import type { ChatRequest, Usage } from '../../formats/chat.js';
import { lanePlugins, lanePluginsDropped, withPlugins } from '../../formats/plugins.js';
import { isGatehouseReasoningState } from '../../formats/reasoning-state.js';
import {
  chatResponseToResponses,
  chatStreamToResponses,
  outputText,
  type ResponsesCost,
  type ResponsesOutputItem,
  responsesRequestToChat,
} from '../../formats/responses.js';
import { sseJson } from '../../formats/sse.js';
import { laneSearchDropped, laneWebSearch } from '../../formats/web-search.js';
import { extended } from '../../lib/objects.js';
import type { Body, RouteInfo, TextSlot } from '../../routing/call.js';
import { costOf } from '../../routing/pricing.js';
import { envelope } from '../../server/errors.js';
import { responsesCost } from '../decorate.js';
import { withFinalUsage } from './final-usage.js';
import {
  contentSlots,
  formatSlots,
  isObj,
  responsesAnswerSlots,
  responsesFrameSlots,
  roleOf,
  stringSlot,
  toolSlots,
} from './texts.js';
import {
  answerModel,
  type ChatWire,
  GATEHOUSE_FIELDS,
  inspectBody,
  laneDroppedHeaders,
  withAnthropicBeta,
  withoutFields,
} from './wire.js';

/** Per lane stream: the sequence number after the last one a relayed event carried. */
const relayedSequence = new WeakMap<RouteInfo, number>();
const SEQUENCE = '"sequence_number":';

/** Notes the last `sequence_number` of a relayed frame (one native search; events hold one each). */
function noteSequence(info: RouteInfo, frame: string | Buffer): void {
  const at = frame.lastIndexOf(SEQUENCE);
  if (at < 0) return;
  const from = at + SEQUENCE.length;
  const tail =
    typeof frame === 'string' ? frame.slice(from, from + 24) : frame.toString('latin1', from, from + 24);
  const n = Number.parseInt(tail.trimStart(), 10);
  if (Number.isSafeInteger(n)) relayedSequence.set(info, n + 1);
}

/**
 * The instructions, message texts, function-call arguments and custom-tool inputs (as the
 * assistant's), tool outputs (as the tool's), tools (descriptions and parameter schemas), the
 * `text.format` schema.
 */
function texts(body: Body): TextSlot[] {
  const out: TextSlot[] = [];
  stringSlot(out, 'system', body, 'instructions');
  if (typeof body.input === 'string') stringSlot(out, 'user', body, 'input');
  else if (Array.isArray(body.input))
    for (const item of body.input) {
      if (!isObj(item)) continue;
      switch (item.type ?? 'message') {
        case 'message':
          contentSlots(out, roleOf(item.role), item);
          break;
        case 'function_call':
          stringSlot(out, 'assistant', item, 'arguments');
          break;
        case 'custom_tool_call':
          stringSlot(out, 'assistant', item, 'input');
          break;
        case 'function_call_output':
        case 'custom_tool_call_output':
          contentSlots(out, 'tool', item, 'output');
          break;
      }
    }
  toolSlots(out, body);
  if (isObj(body.text)) formatSlots(out, body.text.format);
  return out;
}

/**
 * OpenRouter's Responses object requires `completed_at` and the two penalties, which OpenAI's
 * may not send, and carries `output_text`: filled in when absent (never overwritten), with the
 * cost in the usage when known.
 */
function withOpenRouterFields(
  response: Record<string, unknown>,
  cost?: ResponsesCost,
): Record<string, unknown> {
  // A copy by assignment: the members set below would give a spread copy a hidden class per call.
  const out = extended(response, {});
  if (out.completed_at === undefined)
    out.completed_at = out.status === 'completed' ? Math.floor(Date.now() / 1000) : null;
  if (out.frequency_penalty === undefined) out.frequency_penalty = null;
  if (out.presence_penalty === undefined) out.presence_penalty = null;
  if (out.output_text === undefined && Array.isArray(out.output))
    out.output_text = outputText(out.output as ResponsesOutputItem[]);
  if (cost && isObj(out.usage)) out.usage = extended(out.usage, cost);
  return out;
}

/**
 * The `input` indexes of reasoning items carrying Gatehouse's reasoning state (a translated
 * answer's, sent back or restored from storage): OpenAI could neither read that state nor find
 * their ids, and would refuse the call, so a lane leaves them out (the conversation may change
 * providers between turns).
 */
function gatehouseReasoningItems(body: Body): number[] {
  if (!Array.isArray(body.input)) return [];
  return body.input.flatMap((item, i) =>
    isObj(item) && item.type === 'reasoning' && isGatehouseReasoningState(item.encrypted_content) ? [i] : [],
  );
}

/**
 * `background: true` is served in the foreground on a lane too: OpenAI would answer `queued` and
 * finish the response where Gatehouse never sees it (neither its answer nor its usage), so the call
 * is made as an ordinary one and answered when done — what a client polling it then reads at once.
 */
const BACKGROUND = ['background'] as const;

function laneBody(body: Body, upstreamModel: string): Body {
  const out = laneWebSearch(
    withoutFields(
      lanePlugins(body, 'responses'),
      upstreamModel,
      body.background === true ? [...GATEHOUSE_FIELDS, ...BACKGROUND] : GATEHOUSE_FIELDS,
    ),
    'responses',
  );
  const own = new Set(gatehouseReasoningItems(body));
  if (own.size && Array.isArray(body.input)) out.input = body.input.filter((_, i) => !own.has(i));
  return out;
}

/** `POST /responses`: OpenAI's Responses format. */
export const responsesWire: ChatWire = {
  endpoint: 'responses',
  native: 'openai-responses',
  kind: 'chat',
  path: '/responses',
  summary: 'Responses (OpenAI Responses format), streaming or not',
  // OpenAI's betas, and what Codex sends that shapes OpenAI's answer and its prompt cache: the
  // dialect of its own models, its session (cache affinity), its client and beta features.
  forwardHeaders: [
    'openai-beta',
    'x-openai-internal-codex-responses-lite',
    'session_id',
    'session-id',
    'originator',
    'x-codex-beta-features',
    'x-codex-turn-metadata',
    // For an Anthropic model's translated call (never sent on an OpenAI lane).
    'anthropic-beta',
  ],
  inspect: inspectBody,
  parse: (body, headers) => withPlugins(withAnthropicBeta(responsesRequestToChat(body), headers), body),
  laneDropped: (body, headers) => [
    ...(body.background === true ? BACKGROUND : []),
    ...gatehouseReasoningItems(body).map((i) => `input[${i}]`),
    ...laneSearchDropped(body, 'responses'),
    ...lanePluginsDropped(body, 'responses'),
    ...laneDroppedHeaders(headers),
  ],
  texts,
  laneBody,
  answerTexts: responsesAnswerSlots,
  frameTexts: responsesFrameSlots,
  encodeResponse: (done) =>
    chatResponseToResponses(
      { ...done.response, usage: done.usage, id: done.info.generationId },
      answerModel(done.info),
      done.info.upstreamRequest as ChatRequest,
      { cost: () => responsesCost(done.cost, done.info.served.credential.isByok) },
    ),
  async *encodeStream(s) {
    const { info } = s;
    const request = info.upstreamRequest as ChatRequest;
    // The final usage is priced from its own token counts, as the chat wire's usage chunk is.
    const cost = (u: Usage) =>
      responsesCost(costOf(info.served.endpoint.pricing, u), info.served.credential.isByok);
    const stream = chatStreamToResponses(withFinalUsage(s), answerModel(info), request, {
      cost,
      id: info.generationId,
    });
    for await (const e of stream) yield sseJson(e.data, e.event);
  },
  // The provider's own answer, with the few fields OpenRouter's Responses object has and OpenAI's
  // lacks (its SDK validates them) and the cost in its usage; nothing of the provider's changes.
  relayJson(done) {
    const json = done.forwarded.json;
    if (!isObj(json)) return done.forwarded.text;
    return withOpenRouterFields(json, responsesCost(done.cost, done.info.served.credential.isByok));
  },
  // Only the events carrying the response object (created, in_progress, completed) are rewritten.
  relayFrame(frame, info) {
    noteSequence(info, frame.frame);
    const json = frame.json;
    if (!isObj(json) || !isObj(json.response)) return frame.frame;
    const cost = frame.usage
      ? responsesCost(costOf(info.served.endpoint.pricing, frame.usage), info.served.credential.isByok)
      : undefined;
    return sseJson({ ...json, response: withOpenRouterFields(json.response, cost) }, String(json.type));
  },
  // Numbered after the events relayed before the failure (clients such as the AI SDK's OpenAI
  // provider refuse a `response.failed` or `error` event without its `sequence_number`).
  streamError: (info, message) => {
    const error = { code: 'server_error', message };
    const seq = relayedSequence.get(info) ?? 0;
    return [
      sseJson(
        {
          type: 'response.failed',
          sequence_number: seq,
          response: { id: info.generationId, object: 'response', status: 'failed', error },
        },
        'response.failed',
      ),
      sseJson({ type: 'error', sequence_number: seq + 1, ...error, param: null }, 'error'),
    ];
  },
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
