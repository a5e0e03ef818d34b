import { describe, expect, it } from 'vitest';
import { ApiError } from '../lib/errors.js';
import { inAnthropicTerms, messageBatchBody } from './anthropic-body.js';

/** The rewritten body, from `text` sent in chunks of `size` bytes. */
async function rewrite(text: string, size: number): Promise<string> {
  const bytes = Buffer.from(text);
  async function* chunks() {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
  }
  const out: Buffer[] = [];
  for await (const b of messageBatchBody(chunks(), 1 << 20)) out.push(b);
  return Buffer.concat(out).toString();
}

async function refusal(text: string): Promise<ApiError> {
  try {
    await rewrite(text, 7);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('the Message Batches body, rewritten for the batch ingestion', () => {
  const requests = Array.from({ length: 5 }, (_, i) => ({
    custom_id: `r_${i}-x`,
    params: { model: 'a/b', max_tokens: 5, messages: [{ role: 'user', content: `héllo ${i} "q" }]` }] },
  }));

  it('gives the same Gatehouse body whatever the chunking, requests in order', async () => {
    const text = JSON.stringify({ requests }, null, 1);
    const want = {
      endpoint: '/v1/messages',
      completion_window: '24h',
      requests: requests.map((r) => ({ custom_id: r.custom_id, body: r.params })),
    };
    for (const size of [1, 2, 3, 7, 64, 1 << 16])
      expect(JSON.parse(await rewrite(text, size)), `${size}`).toEqual(want);
  });

  it("refuses what Anthropic refuses, naming the request's index and custom_id", async () => {
    const one = (item: object) => JSON.stringify({ requests: [requests[0], item] });
    expect((await refusal(one({ custom_id: 'a.b', params: {} }))).metadata).toEqual({
      index: 1,
      custom_id: 'a.b',
    });
    expect((await refusal(one({ custom_id: 'x'.repeat(65), params: {} }))).message).toMatch(/1 to 64/);
    expect((await refusal(one({ custom_id: 'ok', params: [] }))).message).toMatch(
      /\.params: must be an object/,
    );
    expect((await refusal(one({ custom_id: 'ok', params: {}, extra: 1 }))).message).toMatch(
      /unknown field "extra"/,
    );
    expect((await refusal('{"requests": []}')).message).toMatch(/at least one request/);
    expect((await refusal('{"requests": [], "model": "a/b"}')).message).toMatch(/Unknown field "model"/);
    expect((await refusal('{"requests": [')).status).toBe(400);
  });

  it("renames the ingestion's `.body` to the caller's `.params`", () => {
    const err = new ApiError(400, 'requests[3] (custom_id "a-1").body.stream: not supported', { index: 3 });
    expect((inAnthropicTerms(err) as ApiError).message).toBe(
      'requests[3] (custom_id "a-1").params.stream: not supported',
    );
    const other = new ApiError(400, 'Batch input exceeds the payload limit');
    expect(inAnthropicTerms(other)).toBe(other);
  });
});
