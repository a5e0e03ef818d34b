import { Type } from '@sinclair/typebox';
import type { EmbeddingsResponse } from '../../formats/chat.js';
import type { Body, TextSlot } from '../../routing/call.js';
import { envelope } from '../../server/errors.js';
import { embeddingsRequestFromBody } from '../bodies.js';
import { fullUsage } from '../decorate.js';
import { stringSlot } from './texts.js';
import { type CallerWire, GATEHOUSE_FIELDS, inspectBody, withoutFields } from './wire.js';

/** String inputs (token-id inputs carry no text). */
function texts(body: Body): TextSlot[] {
  const out: TextSlot[] = [];
  if (typeof body.input === 'string') stringSlot(out, 'user', body, 'input');
  else if (Array.isArray(body.input))
    for (let i = 0; i < body.input.length; i++) stringSlot(out, 'user', body.input, i);
  return out;
}

/** `POST /embeddings`: OpenAI's Embeddings format (no streams). */
export const embeddingsWire: CallerWire<EmbeddingsResponse> = {
  endpoint: 'embeddings',
  native: 'openai-embeddings',
  kind: 'embeddings',
  path: '/embeddings',
  summary: 'Embeddings (OpenAI format)',
  forwardHeaders: [],
  inspect: inspectBody,
  parse: embeddingsRequestFromBody,
  texts,
  laneBody: (body, upstreamModel) => withoutFields(body, upstreamModel, GATEHOUSE_FIELDS),
  encodeResponse: (done) => ({
    ...done.response,
    id: done.info.generationId,
    model: done.info.model.id,
    provider: done.info.served.endpoint.provider,
    usage: fullUsage(done.usage, done.cost, done.info.served.credential.isByok),
  }),
  streamError: () => [],
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
