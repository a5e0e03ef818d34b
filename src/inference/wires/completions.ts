import { Type } from '@sinclair/typebox';
import { chatToCompletion, chunkToCompletion, completionsRequestToChat } from '../../formats/completions.js';
import { sseJson } from '../../formats/sse.js';
import type { Body, RouteInfo, TextSlot } from '../../routing/call.js';
import { envelope } from '../../server/errors.js';
import { fullUsage, gatewayMetadata, withProviderAndCost } from '../decorate.js';
import { openAiFormatStream, relayUsageFrame } from './chat.js';
import { completionAnswerSlots, completionChunkSlots, isObj, stringSlot } from './texts.js';
import { type ChatWire, GATEHOUSE_FIELDS, inspectBody, laneDroppedHeaders, withoutFields } from './wire.js';

/** OpenRouter's request extensions a provider's Completions API does not take. */
const DROPPED = [...GATEHOUSE_FIELDS, 'usage', 'reasoning'] as const;

/** The prompt (each one of a list of text prompts), and `suffix`: the user's text. */
function texts(body: Body): TextSlot[] {
  const out: TextSlot[] = [];
  const { prompt } = body;
  if (typeof prompt === 'string') stringSlot(out, 'user', body, 'prompt');
  else if (Array.isArray(prompt)) for (let i = 0; i < prompt.length; i++) stringSlot(out, 'user', prompt, i);
  stringSlot(out, 'user', body, 'suffix');
  return out;
}

/** A lane's body: the upstream's model, without Gatehouse's fields; a stream asks for its usage. */
function laneBody(body: Body, upstreamModel: string): Body {
  const out = withoutFields(body, upstreamModel, DROPPED);
  if (body.stream === true)
    out.stream_options = { ...(isObj(body.stream_options) ? body.stream_options : {}), include_usage: true };
  return out;
}

/** A chunk of Gatehouse's own in a stream: the in-band error that ends a failed one, then `[DONE]`. */
function errorFrames(info: RouteInfo, code: number, message: string): string[] {
  return [
    sseJson({
      id: info.generationId,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: info.model.id,
      provider: info.served.endpoint.provider,
      error: { code, message },
      choices: [{ text: '', index: 0, logprobs: null, finish_reason: 'error' }],
    }),
    'data: [DONE]\n\n',
  ];
}

/**
 * `POST /completions`: OpenAI's legacy Completions format (a prompt in, a text out), as OpenRouter
 * and OpenAI-compatible servers serve it. Its models are the chat models: a provider of the
 * Completions API takes the body as it is, any other gets the prompt as a chat message
 * (formats/completions.ts says what only the native API does).
 */
export const completionsWire: ChatWire = {
  endpoint: 'completions',
  native: 'openai-completions',
  kind: 'chat',
  path: '/completions',
  summary: 'Text completion (OpenAI legacy Completions format), streaming or not',
  forwardHeaders: ['openai-beta'],
  inspect: inspectBody,
  parse: (body) => completionsRequestToChat(body),
  texts,
  laneBody,
  laneDropped: (_body, headers) => laneDroppedHeaders(headers),
  answerTexts: completionAnswerSlots,
  frameTexts: completionChunkSlots,
  encodeResponse: (done, call) => {
    const { info } = done;
    return {
      ...chatToCompletion(done.response),
      id: info.generationId,
      model: info.model.id,
      provider: info.served.endpoint.provider,
      usage: fullUsage(done.usage, done.cost, info.served.credential.isByok),
      gateway_metadata: gatewayMetadata(info),
      ...(call.echoUpstream ? { debug: { echo_upstream_body: info.upstreamRequest } } : {}),
    };
  },
  encodeStream: (s) =>
    openAiFormatStream(
      s,
      (chunk) => ({
        ...chunkToCompletion(chunk),
        id: s.info.generationId,
        model: s.info.model.id,
        provider: s.info.served.endpoint.provider,
      }),
      errorFrames,
    ),
  relayJson: (done, call) =>
    withProviderAndCost(done, {
      gateway_metadata: gatewayMetadata(done.info),
      ...(call.echoUpstream ? { debug: { echo_upstream_body: done.info.upstreamRequest } } : {}),
    }),
  // Only the usage chunk of a relayed stream is re-serialized (its cost added).
  relayFrame: relayUsageFrame,
  streamError: (info, message, status = 502) => errorFrames(info, status, message),
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
