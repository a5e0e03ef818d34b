import { Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { TranslationError } from '../../formats/chat.js';
import { documentObject, type RerankRequest, type RerankResponse } from '../../formats/rerank.js';
import { badRequest } from '../../lib/errors.js';
import type { Body, TextSlot } from '../../routing/call.js';
import { envelope } from '../../server/errors.js';
import { isObj, stringSlot } from './texts.js';
import { type CallerWire, GATEHOUSE_FIELDS, inspectBody, withoutFields } from './wire.js';

/** A structured document: text and/or an image (URL or data URI), at least one. */
const DocumentObject = Type.Union([
  Type.Object({ text: Type.String(), image: Type.Optional(Type.String()) }),
  Type.Object({ text: Type.Optional(Type.String()), image: Type.String() }),
]);

/** OpenRouter's rerank body as the wire validates it. */
const RerankBody = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    query: Type.String({ minLength: 1 }),
    documents: Type.Array(Type.Union([Type.String(), DocumentObject]), { minItems: 1 }),
    top_n: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: true },
);

const rerankCheck = TypeCompiler.Compile(RerankBody);

/** A rerank body → the canonical request; TranslationError names the first field that is wrong. */
function rerankRequestFromBody(body: unknown): RerankRequest {
  if (!rerankCheck.Check(body)) {
    const first = rerankCheck.Errors(body).First();
    const path = first?.path ? first.path.slice(1).replaceAll('/', '.') : '';
    throw new TranslationError(`${path || 'body'}: ${first?.message ?? 'invalid rerank request'}`);
  }
  return {
    model: body.model,
    query: body.query,
    documents: body.documents,
    ...(body.top_n !== undefined ? { top_n: body.top_n } : {}),
  };
}

/** The query and the documents' texts (an image has none). */
function texts(body: Body): TextSlot[] {
  const out: TextSlot[] = [];
  stringSlot(out, 'user', body, 'query');
  if (Array.isArray(body.documents))
    for (let i = 0; i < body.documents.length; i++) {
      const d = body.documents[i];
      if (isObj(d)) stringSlot(out, 'user', d, 'text');
      else stringSlot(out, 'user', body.documents, i);
    }
  return out;
}

/**
 * `POST /rerank`: OpenRouter's rerank format. No provider takes it as it is (each adapter speaks its
 * upstream's rerank API), so the whole body is checked before the call: a malformed one is a 400
 * whatever the model.
 */
export const rerankWire: CallerWire<RerankResponse> = {
  endpoint: 'rerank',
  native: 'openrouter-rerank',
  kind: 'rerank',
  path: '/rerank',
  summary: 'Rerank documents against a query (OpenRouter format)',
  forwardHeaders: [],
  inspect: (body) => {
    const inspected = inspectBody(body);
    try {
      rerankRequestFromBody(body);
    } catch (err) {
      if (err instanceof TranslationError) throw badRequest(err.message);
      throw err;
    }
    return inspected;
  },
  parse: rerankRequestFromBody,
  texts,
  laneBody: (body, upstreamModel) => withoutFields(body, upstreamModel, GATEHOUSE_FIELDS),
  // Best first, each with its document: the upstream's echo, else the request's as it was sent
  // upstream (after the content filters' redactions).
  encodeResponse: (done) => {
    const sent = (done.info.sentBody.documents ?? []) as RerankRequest['documents'];
    const isByok = done.info.served.credential.isByok;
    return {
      id: done.info.generationId,
      model: done.info.model.id,
      provider: done.info.served.endpoint.provider,
      results: done.response.results.map((r) => ({
        index: r.index,
        relevance_score: r.relevance_score,
        document: r.document ?? documentObject(sent[r.index] ?? ''),
      })),
      usage: {
        total_tokens: done.usage.total_tokens,
        ...(done.usage.search_units !== undefined ? { search_units: done.usage.search_units } : {}),
        // A BYOK call costs no credits: its price is the provider's (as on the other endpoints).
        cost: isByok ? 0 : done.cost.total,
        is_byok: isByok,
      },
    };
  },
  streamError: () => [],
  renderError: envelope,
  errorSchema: Type.Ref('ErrorBody'),
};
