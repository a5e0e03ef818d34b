import { Type } from '@sinclair/typebox';
import {
  chatResponseToMessages,
  chatStreamToMessages,
  messagesRequestToChat,
} from '../../formats/messages.js';
import { lanePlugins, lanePluginsDropped, withPlugins } from '../../formats/plugins.js';
import { isGatehouseReasoningState } from '../../formats/reasoning-state.js';
import { sseJson } from '../../formats/sse.js';
import { laneSearchDropped, laneWebSearch } from '../../formats/web-search.js';
import type { Body, TextSlot } from '../../routing/call.js';
import type { ErrorRenderer } from '../../server/errors.js';
import { withFinalUsage } from './final-usage.js';
import {
  contentSlots,
  documentSlots,
  formatSlots,
  isObj,
  leafSlots,
  messagesAnswerSlots,
  messagesFrameSlots,
  roleOf,
  stringSlot,
  toolSlots,
} from './texts.js';
import { answerModel, type ChatWire, GATEHOUSE_FIELDS, inspectBody, withoutFields } from './wire.js';

/** Anthropic's error type for each status Gatehouse answers with. */
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const errorType = (status: number) =>
  ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');

/**
 * Anthropic's error object `{type:'error', error:{type, message, details?}, request_id}` (`details`
 * for a client that acts on it: a thread refused, formats/threads.ts); an Anthropic provider's own
 * error body (a lane's failure) goes back as it came.
 */
const renderError: ErrorRenderer = ({ status, message, metadata }, request) => {
  const native = metadata?.upstream_error;
  if (isObj(native) && native.type === 'error' && isObj(native.error)) return native;
  const details = isObj(metadata?.details) ? { details: metadata.details } : {};
  return { type: 'error', error: { type: errorType(status), message, ...details }, request_id: request.id };
};

const ErrorSchema = Type.Object(
  {
    type: Type.Literal('error'),
    error: Type.Object({ type: Type.String(), message: Type.String() }, { additionalProperties: true }),
    request_id: Type.Optional(Type.String()),
  },
  { title: 'AnthropicError', additionalProperties: true },
);

/**
 * The system prompt, message text blocks, documents' text, tool results (as the tool's) and tool
 * inputs (as the assistant's), tools (descriptions and input schemas), the output format's schema. Thinking blocks are signed by the provider: never rewritten.
 */
function texts(body: Body): TextSlot[] {
  const out: TextSlot[] = [];
  contentSlots(out, 'system', body, 'system');
  if (Array.isArray(body.messages))
    for (const m of body.messages) {
      if (!isObj(m)) continue;
      const role = roleOf(m.role);
      if (!Array.isArray(m.content)) {
        stringSlot(out, role, m, 'content');
        continue;
      }
      for (const block of m.content) {
        if (!isObj(block)) continue;
        if (block.type === 'text') stringSlot(out, role, block, 'text', m.content);
        else if (block.type === 'tool_result') contentSlots(out, 'tool', block);
        else if (block.type === 'tool_use') leafSlots(out, 'assistant', block, 'input');
        else documentSlots(out, role, block);
      }
    }
  toolSlots(out, body);
  // Structured outputs: `output_format` (beta) and `output_config.format`.
  formatSlots(out, body.output_format);
  if (isObj(body.output_config)) formatSlots(out, body.output_config.format);
  return out;
}

/**
 * `messages[i].content[j]` of the `redacted_thinking` blocks holding Gatehouse's sealed reasoning
 * state (another provider's, see formats/messages.ts): Anthropic could not read them and would
 * refuse the call, so a pass-through leaves them out (a conversation may change providers).
 */
function sealedBlocks(body: Body): [number, number][] {
  if (!Array.isArray(body.messages)) return [];
  return body.messages.flatMap((m, i) =>
    isObj(m) && Array.isArray(m.content)
      ? m.content.flatMap((b, j): [number, number][] =>
          isObj(b) && b.type === 'redacted_thinking' && isGatehouseReasoningState(b.data) ? [[i, j]] : [],
        )
      : [],
  );
}

function withoutSealed(body: Body): Body {
  if (sealedBlocks(body).length === 0) return body;
  return {
    ...body,
    messages: (body.messages as unknown[]).map((m) =>
      isObj(m) && Array.isArray(m.content)
        ? {
            ...m,
            content: m.content.filter(
              (b) => !(isObj(b) && b.type === 'redacted_thinking' && isGatehouseReasoningState(b.data)),
            ),
          }
        : m,
    ),
  };
}

/** `POST /messages`: Anthropic's Messages format. */
export const messagesWire: ChatWire = {
  endpoint: 'messages',
  native: 'anthropic-messages',
  kind: 'chat',
  path: '/messages',
  summary: 'Messages (Anthropic format), streaming or not',
  forwardHeaders: ['anthropic-version', 'anthropic-beta'],
  inspect: inspectBody,
  // A beta the translation cannot carry is listed as dropped.
  parse: (body, headers) => withPlugins(messagesRequestToChat(body, headers), body),
  texts,
  // Anthropic refuses fields it does not know: OpenRouter's `usage` goes with Gatehouse's own; the
  // `web` plugin becomes Anthropic's own web search server tool.
  laneBody: (body, upstreamModel) =>
    withoutFields(lanePlugins(laneWebSearch(withoutSealed(body), 'messages'), 'messages'), upstreamModel, [
      ...GATEHOUSE_FIELDS,
      'usage',
    ]),
  laneDropped: (body) => [
    ...laneSearchDropped(body, 'messages'),
    ...lanePluginsDropped(body, 'messages'),
    ...sealedBlocks(body).map(([i, j]) => `messages[${i}].content[${j}]`),
  ],
  answerTexts: messagesAnswerSlots,
  frameTexts: messagesFrameSlots,
  encodeResponse: (done) =>
    chatResponseToMessages(
      { ...done.response, usage: done.usage, model: done.info.model.id },
      answerModel(done.info),
    ),
  async *encodeStream(s) {
    for await (const e of chatStreamToMessages(withFinalUsage(s), answerModel(s.info)))
      yield sseJson(e.data, e.event);
  },
  streamError: (_info, message, status = 502) => [
    sseJson({ type: 'error', error: { type: errorType(status), message } }, 'error'),
  ],
  renderError,
  errorSchema: ErrorSchema,
};

/**
 * `POST /messages/count_tokens`: the same body, counted by a provider that counts natively
 * (Anthropic's own endpoint), else estimated.
 */
export const countTokensWire: ChatWire = {
  ...messagesWire,
  native: 'anthropic-count-tokens',
  // A body to count has no max_tokens (nothing is generated): checked as a message all the same.
  parse: (body, headers) => withPlugins(messagesRequestToChat({ max_tokens: 1, ...body }, headers), body),
  path: '/messages/count_tokens',
  summary:
    'Count the tokens of a Messages request (Anthropic format; estimated where the provider has no count)',
};
