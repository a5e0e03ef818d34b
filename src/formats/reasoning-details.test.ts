import { describe, expect, it } from 'vitest';
import { TranslationError } from './chat.js';
import { collapseReasoningDetails, detailsOfFormat, parseReasoningDetails } from './reasoning-details.js';

const A = 'anthropic-claude-v1';
const G = 'google-gemini-v1';

describe('parseReasoningDetails', () => {
  it('keeps the known types with their fields and drops unknown ones', () => {
    expect(
      parseReasoningDetails(
        [
          { type: 'reasoning.text', text: 't', signature: 's', format: A, index: 0, extra: 1 },
          { type: 'reasoning.text' },
          { type: 'reasoning.encrypted', data: 'd', id: 'call_1', format: G },
          { type: 'reasoning.summary', summary: 'sum', index: 2 },
          { type: 'something.else', whatever: true },
        ],
        'x',
      ),
    ).toEqual([
      { type: 'reasoning.text', text: 't', signature: 's', format: A, index: 0 },
      { type: 'reasoning.text', text: '' },
      { type: 'reasoning.encrypted', data: 'd', id: 'call_1', format: G },
      { type: 'reasoning.summary', summary: 'sum', index: 2 },
    ]);
  });

  it.each([
    ['x', {}],
    ['x[0]', [null]],
    ['x[0].type', [{ type: 3 }]],
    ['x[0].type', [{ type: '' }]],
    ['x[0].text', [{ type: 'reasoning.text', text: 3 }]],
    ['x[0].summary', [{ type: 'reasoning.summary' }]],
    ['x[0].format', [{ type: 'reasoning.encrypted', data: 'd', format: 1 }]],
    ['x[0].index', [{ type: 'reasoning.encrypted', data: 'd', index: 0.5 }]],
  ])('refuses %s', (path, v) => {
    expect(() => parseReasoningDetails(v, 'x')).toThrow(TranslationError);
    expect(() => parseReasoningDetails(v, 'x')).toThrow(new RegExp(`^${path.replace(/[[\].]/g, '\\$&')}:`));
  });
});

describe('collapseReasoningDetails', () => {
  it('merges fragments sharing type, format and index; keeps order of first appearance', () => {
    const fragments = [
      { type: 'reasoning.text' as const, text: 'a', format: A, index: 0 },
      { type: 'reasoning.encrypted' as const, data: 'R', format: A, index: 1 },
      { type: 'reasoning.text' as const, text: 'b', format: A, index: 0 },
      { type: 'reasoning.text' as const, text: '', signature: 'S', format: A, index: 0 },
      { type: 'reasoning.summary' as const, summary: 'x', index: 2 },
      { type: 'reasoning.summary' as const, summary: 'y', index: 2 },
      { type: 'reasoning.text' as const, text: 'no index' },
      { type: 'reasoning.text' as const, text: 'no index again' },
    ];
    const copy = structuredClone(fragments);
    expect(collapseReasoningDetails(fragments)).toEqual([
      { type: 'reasoning.text', text: 'ab', signature: 'S', format: A, index: 0 },
      { type: 'reasoning.encrypted', data: 'R', format: A, index: 1 },
      { type: 'reasoning.summary', summary: 'xy', index: 2 },
      { type: 'reasoning.text', text: 'no index' },
      { type: 'reasoning.text', text: 'no index again' },
    ]);
    expect(fragments).toEqual(copy); // input untouched
  });

  it('detailsOfFormat keeps one format (collapsed)', () => {
    expect(
      detailsOfFormat(
        [
          { type: 'reasoning.text', text: 'a', format: A, index: 0 },
          { type: 'reasoning.text', text: 'g', format: G, index: 0 },
          { type: 'reasoning.text', text: 'b', format: A, index: 0 },
        ],
        A,
      ),
    ).toEqual([{ type: 'reasoning.text', text: 'ab', format: A, index: 0 }]);
    expect(detailsOfFormat(undefined, A)).toEqual([]);
  });
});
