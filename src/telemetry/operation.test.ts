import { describe, expect, it } from 'vitest';
import { operationName } from './operation.js';

describe('operationName', () => {
  it('names chat for every chat endpoint and kind, each other kind by its own name', () => {
    for (const chat of ['chat', 'messages', 'responses', undefined]) expect(operationName(chat)).toBe('chat');
    for (const own of ['embeddings', 'rerank', 'speech', 'transcription'])
      expect(operationName(own)).toBe(own);
  });
});
