import { describe, expect, it } from 'vitest';
import type { ChatResponse } from '../formats/chat.js';
import type { SafeguardResult } from '../guardrails/content-filters.js';
import { decorateChatResponse, decorateChunk } from './decorate.js';

const own: SafeguardResult = { type: 'content_filter', status: { type: 'passed' }, label: 'PII', matches: 0 };
const azure: SafeguardResult = {
  type: 'content_filter',
  status: { type: 'flagged' },
  label: 'Azure content filter: violence (medium)',
  slug: 'azure-violence',
  matches: 1,
};

/** The route info the decorators read (a served call, no fallbacks). */
const info = {
  generationId: 'gen-1',
  model: { id: 'acme/gpt' },
  primaryModel: 'acme/gpt',
  served: {
    endpoint: { provider: 'my-azure' },
    credential: { isByok: false },
    provider: { region: 'global' },
  },
  safeguards: [own],
  attempts: 1,
  startedAt: Date.now(),
  requested: 'acme/gpt',
  strategy: 'default',
  excluded: [],
  considered: [],
  dropped: [],
  modelsTried: [],
  skippedModels: [],
} as never;

describe('provider safeguards in a translated answer', () => {
  const res: ChatResponse = {
    id: 'x',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    provider_safeguards: [azure],
  };
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

  it("follow the gateway's own results in safeguard_results, never as a field of their own", () => {
    const out = decorateChatResponse(res, info, usage, { total: 0 } as never, false) as Record<
      string,
      unknown
    >;
    expect(out.safeguard_results).toEqual([own, azure]);
    expect(out).not.toHaveProperty('provider_safeguards');
  });

  it('are reported on the stream chunk that carried them', () => {
    const chunk = decorateChunk(
      {
        id: 'c',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [],
        provider_safeguards: [azure],
      },
      info,
    ) as Record<string, unknown>;
    expect(chunk.safeguard_results).toEqual([azure]);
    expect(chunk).not.toHaveProperty('provider_safeguards');
  });
});
