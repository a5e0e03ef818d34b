import { Type } from '@sinclair/typebox';
import type { ChatRequest } from '../../formats/chat.js';
import {
  chatResponseToResponses,
  chatStreamToResponses,
  responsesRequestToChat,
} from '../../formats/responses.js';
import { sseJson } from '../../formats/sse.js';
import type { Body, TextSlot } from '../../routing/call.js';
import { envelope } from '../../server/errors.js';
import { withFinalUsage } from './final-usage.js';
import { contentSlots, isObj, roleOf, stringSlot, toolDescriptionSlots } from './texts.js';
import { type ChatWire, GATEHOUSE_FIELDS, inspectBody, withoutFields } from './wire.js';

/**
 * The instructions, message texts, function-call arguments and custom-tool inputs (as the
 * assistant's), tool outputs (as the tool's), tool descriptions.
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
  toolDescriptionSlots(out, body);
  return out;
}

/** `POST /responses`: OpenAI's Responses format. */
export const responsesWire: ChatWire = {
  endpoint: 'responses',
  native: 'openai-responses',
  kind: 'chat',
  path: '/responses',
  summary: 'Responses (OpenAI Responses format), streaming or not',
  forwardHeaders: ['openai-beta'],
  inspect: inspectBody,
  parse: responsesRequestToChat,
  texts,
  laneBody: (body, upstreamModel) => withoutFields(body, upstreamModel, GATEHOUSE_FIELDS),
  encodeResponse: (done, call) =>
    chatResponseToResponses(
      { ...done.response, usage: done.usage, id: done.info.generationId },
      String(call.body.model),
      done.info.upstreamRequest as ChatRequest,
    ),
  async *encodeStream(s, call) {
    const request = s.info.upstreamRequest as ChatRequest;
    for await (const e of chatStreamToResponses(withFinalUsage(s), call.model, request))
      yield sseJson(e.data, e.event);
  },
  streamError: (info, message) => {
    const error = { code: 'server_error', message };
    return [
      sseJson(
        {
          type: 'response.failed',
          response: { id: info.generationId, object: 'response', status: 'failed', error },
        },
        'response.failed',
      ),
      sseJson({ type: 'error', ...error, param: null }, 'error'),
    ];
  },
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
