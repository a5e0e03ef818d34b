import { type Static, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { type EmbeddingsRequest, type EmbeddingsResponse, TranslationError } from '../../formats/chat.js';
import type { Body, TextSlot } from '../../routing/call.js';
import { envelope } from '../../server/errors.js';
import { fullUsage, withProviderAndCost } from '../decorate.js';
import { stringSlot } from './texts.js';
import { type CallerWire, GATEHOUSE_FIELDS, inspectBody, withoutFields } from './wire.js';

/** The Embeddings body as the translated path validates it. */
const EmbeddingsBody = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.Union([
      Type.String(),
      Type.Array(Type.String(), { minItems: 1 }),
      Type.Array(Type.Integer(), { minItems: 1 }),
      Type.Array(Type.Array(Type.Integer()), { minItems: 1 }),
    ]),
    encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
    dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
    user: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const embeddingsCheck = TypeCompiler.Compile(EmbeddingsBody);

/** An embeddings body (validated as the route's schema does) → the canonical request. */
function embeddingsRequestFromBody(body: unknown): EmbeddingsRequest {
  if (!embeddingsCheck.Check(body)) {
    const first = embeddingsCheck.Errors(body).First();
    const path = first?.path ? first.path.slice(1).replaceAll('/', '.') : 'body';
    throw new TranslationError(`${path || 'body'}: ${first?.message ?? 'invalid embeddings request'}`);
  }
  return embeddingsRequest(body);
}

const embeddingsRequest = (body: Static<typeof EmbeddingsBody>): EmbeddingsRequest => ({
  model: body.model,
  input: body.input,
  encoding_format: body.encoding_format,
  dimensions: body.dimensions,
  user: body.user,
});

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
  // The provider's own answer (its model, data and usage), with what OpenRouter's format adds to
  // it: the provider and the cost, which OpenRouter's clients read back as the translated path gives.
  relayJson: (done) => withProviderAndCost(done),
  streamError: () => [],
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
