import { responsesWire } from './responses.js';
import type { ChatWire } from './wire.js';
import { inspectBody } from './wire.js';

/**
 * `POST /responses/input_tokens`: a Responses body counted — by OpenAI's own endpoint for a model
 * its Responses API serves (the body as sent), else by a provider that counts a translated request
 * (Anthropic), else estimated. Not a call: nothing is billed or recorded.
 */
export const inputTokensWire: ChatWire = {
  ...responsesWire,
  native: 'openai-responses-input-tokens',
  path: '/responses/input_tokens',
  summary: 'Count the input tokens of a Responses request (estimated where the provider has no count)',
  // Nothing is generated: a `stream` field is not read (OpenAI gets it as sent).
  inspect: (body) => ({ model: inspectBody({ ...body, stream: undefined }).model, stream: false }),
  parse: (body, headers) => responsesWire.parse({ ...body, stream: undefined }, headers),
  answerTexts: undefined,
  frameTexts: undefined,
  relayJson: undefined,
  relayFrame: undefined,
  encodeStream: undefined,
};
