import { type Static, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { EmbeddingsRequest } from '../formats/chat.js';
import { TranslationError } from '../formats/chat.js';

/** The Embeddings body as the translated path validates it. */
export const EmbeddingsBody = Type.Object(
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
export function embeddingsRequestFromBody(body: unknown): EmbeddingsRequest {
  if (!embeddingsCheck.Check(body)) {
    const first = embeddingsCheck.Errors(body).First();
    const path = first?.path ? first.path.slice(1).replaceAll('/', '.') : 'body';
    throw new TranslationError(`${path || 'body'}: ${first?.message ?? 'invalid embeddings request'}`);
  }
  return embeddingsRequest(body);
}

export const embeddingsRequest = (body: Static<typeof EmbeddingsBody>): EmbeddingsRequest => ({
  model: body.model,
  input: body.input,
  encoding_format: body.encoding_format,
  dimensions: body.dimensions,
  user: body.user,
});
