import { compactionDraft, compactionRequest } from '../../formats/compaction.js';
import type { Body } from '../../routing/call.js';
import { responsesWire } from './responses.js';
import { type ChatWire, inspectBody } from './wire.js';

/**
 * `POST /responses/compact`: OpenAI's compaction of a Responses conversation. A model OpenAI's
 * Responses API serves takes the body as it is (a lane to its own compact endpoint); any other
 * is asked for a summary (`parse` builds that one call, through the engine like any call), and its
 * answer is drafted here and sealed by the compaction service.
 */
export const compactWire: ChatWire = {
  ...responsesWire,
  native: 'openai-responses-compact',
  path: '/responses/compact',
  summary: 'Compact a Responses conversation (its user messages and one compaction item)',
  // Compaction does not stream: a `stream` field goes to OpenAI as sent, and is not read here.
  inspect: (body) => ({ model: inspectBody({ ...body, stream: undefined }).model, stream: false }),
  parse: (body) => compactionRequest(body),
  // The answer is the caller's own user messages and an opaque item: nothing for answer filters.
  answerTexts: undefined,
  frameTexts: undefined,
  relayJson: undefined,
  relayFrame: undefined,
  encodeStream: undefined,
  encodeResponse: (done, call) =>
    compactionDraft(done.response, done.usage, call.body as Body, done.info.generationId),
};
