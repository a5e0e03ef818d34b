import { describe, expect, it } from 'vitest';
import { costOf, perToken } from './pricing.js';

describe('costOf', () => {
  it('prices prompt and completion tokens per million', () => {
    expect(
      costOf(
        { prompt: 1, completion: 2 },
        { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
      ),
    ).toEqual({ total: 0.002, prompt: 0.001, completion: 0.001 });
  });

  it('prices cached and cache-write prompt tokens at their own rates, plus a per-request price', () => {
    const c = costOf(
      { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75, request: 0.001 },
      {
        prompt_tokens: 10_000,
        completion_tokens: 1000,
        total_tokens: 11_000,
        prompt_tokens_details: { cached_tokens: 4000, cache_write_tokens: 2000 },
      },
    );
    // 4000 plain × 3 + 4000 cached × 0.3 + 2000 written × 3.75 = 12000 + 1200 + 7500 = 20700 per 1M
    expect(c.prompt).toBeCloseTo(0.0207, 12);
    expect(c.completion).toBeCloseTo(0.015, 12);
    expect(c.total).toBeCloseTo(0.0367, 12);
  });

  it('prices the whole call at the long-context tier once the prompt is over its threshold', () => {
    const pricing = {
      prompt: 3,
      completion: 15,
      cached_prompt: 0.3,
      long_context: { above: 200_000, prompt: 6, completion: 22.5, cached_prompt: 0.6 },
    };
    const usage = (prompt: number, cached = 0) => ({
      prompt_tokens: prompt,
      completion_tokens: 1_000_000,
      total_tokens: prompt + 1_000_000,
      prompt_tokens_details: { cached_tokens: cached },
    });
    expect(costOf(pricing, usage(200_000)).total).toBeCloseTo(0.6 + 15, 12);
    // 100k plain × 6 + 100_001 cached × 0.6 per 1M, completion 22.5 per 1M
    expect(costOf(pricing, usage(200_001, 100_001))).toEqual({
      prompt: 0.6600006,
      completion: 22.5,
      total: 23.1600006,
    });
  });

  it('prices the web searches a provider ran per search, in the total', () => {
    const usage = {
      prompt_tokens: 1_000,
      completion_tokens: 100,
      total_tokens: 1_100,
      server_tool_use: { web_search_requests: 3 },
    };
    expect(costOf({ prompt: 3, completion: 15, web_search: 0.01 }, usage)).toEqual({
      prompt: 0.003,
      completion: 0.0015,
      total: 0.0345,
    });
    expect(costOf({ prompt: 3, completion: 15 }, usage).total).toBe(0.0045);
  });

  it('reports per-token price strings', () => {
    expect(perToken(0.15)).toBe('1.5e-7');
    expect(perToken(undefined)).toBe('0');
  });
});
