import { describe, expect, it } from 'vitest';
import type { RerankRequest } from '../formats/rerank.js';
import { fromRerank, toCohereRerank, toJinaRerank } from './rerank.js';
import { UpstreamError } from './types.js';

const req: RerankRequest = {
  model: 'up-model',
  query: 'q',
  documents: ['a', { text: 'b' }, { image: 'https://example.com/c.png' }],
  top_n: 2,
};

describe('rerank wires', () => {
  it("Jina's body keeps structured documents; Cohere's takes their text and refuses an image", () => {
    expect(toJinaRerank(req)).toEqual({
      model: 'up-model',
      query: 'q',
      documents: req.documents,
      top_n: 2,
      return_documents: false,
    });
    expect(toCohereRerank({ ...req, documents: ['a', { text: 'b' }] }).documents).toEqual(['a', 'b']);
    expect(() => toCohereRerank(req)).toThrow(/documents\[2\]: this provider reranks text documents only/);
  });

  it("reads Jina's, Voyage's and Cohere's answers: best first, cut to top_n, usage of each kind", () => {
    const jina = fromRerank(
      {
        results: [
          { index: 0, relevance_score: 0.1 },
          { index: 2, relevance_score: 0.9, document: { text: 'c' } },
          { index: 1, relevance_score: 0.5, document: 'b' },
        ],
        usage: { total_tokens: 12 },
      },
      req,
    );
    expect(jina.results).toEqual([
      { index: 2, relevance_score: 0.9, document: { text: 'c' } },
      { index: 1, relevance_score: 0.5, document: { text: 'b' } },
    ]);
    expect(jina.usage).toEqual({ total_tokens: 12 });
    expect(jina.model).toBe('up-model');

    const voyage = fromRerank({ data: [{ index: 1, relevance_score: 0.3 }], model: 'rerank-2' }, req);
    expect(voyage.results).toEqual([{ index: 1, relevance_score: 0.3 }]);
    expect(voyage.model).toBe('rerank-2');

    const cohere = fromRerank(
      {
        id: 'co-1',
        results: [{ index: 0, relevance_score: 0.7 }],
        meta: { billed_units: { search_units: 1 } },
      },
      req,
    );
    expect(cohere).toMatchObject({ id: 'co-1', usage: { search_units: 1 } });
  });

  it('an answer naming no document of the request, or without scores, is an invalid answer (502)', () => {
    for (const raw of [
      null,
      { results: 'no' },
      { results: [{ index: 3, relevance_score: 1 }] },
      { results: [{ index: -1, relevance_score: 1 }] },
      { results: [{ index: 0 }] },
      { results: [{ index: 0, relevance_score: 'high' }] },
    ]) {
      const err = (() => {
        try {
          fromRerank(raw, req);
        } catch (e) {
          return e;
        }
      })();
      expect(err, JSON.stringify(raw)).toBeInstanceOf(UpstreamError);
      expect((err as UpstreamError).status).toBe(502);
    }
  });
});
