/**
 * The catalog as Anthropic's clients read it: `models.list` and `models.retrieve` of the official
 * `@anthropic-ai/sdk` (which sends `anthropic-version` on every call) get Anthropic's shapes and
 * errors; the same routes without the header answer as before (OpenRouter's shapes).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

describe('the catalog through the Anthropic client', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let anthropic: Anthropic;
  /** The chat models of the OpenRouter-shaped list, in its order. */
  let chatIds: string[];

  beforeAll(async () => {
    const up = await startUpstreams([
      {
        id: 'test/opus',
        name: 'Test Opus',
        aliases: ['opus-alias'],
        endpoints: [
          {
            provider: 'anthropic',
            upstream_model: 'claude-opus-x',
            context_length: 400_000,
            max_completion_tokens: 64_000,
            pricing: { prompt: 5, completion: 25 },
          },
        ],
      },
    ]);
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const all = (await (await fetch(`${gw.url}/api/v1/models?output_modalities=all`)).json()) as {
      data: { id: string; architecture: { input_modalities: string[]; output_modalities: string[] } }[];
    };
    // Chat models: text out, and not from audio (transcription).
    chatIds = all.data
      .filter(
        (m) =>
          m.architecture.output_modalities[0] === 'text' &&
          !m.architecture.input_modalities.includes('audio'),
      )
      .map((m) => m.id);
  });
  afterAll(async () => {
    await gw?.close();
    await mock?.close();
  });

  it('models.list: every chat model as ModelInfo, paged through has_more and after_id', async () => {
    expect(chatIds).toContain('test/opus');
    expect(chatIds).not.toContain('test/embed');
    const seen: Anthropic.ModelInfo[] = [];
    // Two a page: the client follows `has_more` and `last_id` until the list ends.
    for await (const m of anthropic.models.list({ limit: 2 })) seen.push(m);
    expect(seen.map((m) => m.id)).toEqual(chatIds);
    expect(seen.find((m) => m.id === 'test/opus')).toEqual({
      type: 'model',
      id: 'test/opus',
      display_name: 'Test Opus',
      created_at: '1970-01-01T00:00:00Z',
      max_input_tokens: 400_000,
      max_tokens: 64_000,
      capabilities: null,
      lifecycle: 'active',
      line: null,
      deprecated_at: null,
      retires_at: null,
    });
    const first = await anthropic.models.list({ limit: 2 });
    expect(first.has_more).toBe(true);
    expect(first.first_id).toBe(chatIds[0]);
    expect(first.last_id).toBe(chatIds[1]);
  });

  it('models.list: before_id pages backwards; 20 a page by default; a retired-only filter lists none', async () => {
    const last = chatIds.at(-1) as string;
    const before = await anthropic.models.list({ before_id: last, limit: 1 });
    expect(before.data.map((m) => m.id)).toEqual([chatIds.at(-2)]);
    expect(before.has_more).toBe(chatIds.length > 2);
    const res = await fetch(`${gw.url}/api/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } });
    const page = (await res.json()) as { data: unknown[]; has_more: boolean };
    expect(page.data).toHaveLength(Math.min(20, chatIds.length));
    expect(page.has_more).toBe(chatIds.length > 20);
    expect((await anthropic.models.list({ lifecycle: ['retired'] })).data).toEqual([]);
  });

  it('models.retrieve: a model by id or alias, and a typed 404 in Anthropic’s error format', async () => {
    expect(await anthropic.models.retrieve('test/opus')).toMatchObject({
      type: 'model',
      id: 'test/opus',
      display_name: 'Test Opus',
    });
    // An alias resolves to the model's id, as Anthropic resolves its own aliases.
    expect((await anthropic.models.retrieve('opus-alias')).id).toBe('test/opus');
    const err = await anthropic.models.retrieve('test/no-such-model').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect((err as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining('test/no-such-model') },
    });
  });

  it('bad paging is a 400 in Anthropic’s format naming the parameter', async () => {
    const headers = { 'anthropic-version': '2023-06-01' };
    for (const [query, name] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['after_id=nope', 'after_id'],
    ] as const) {
      const res = await fetch(`${gw.url}/api/v1/models?${query}`, { headers });
      expect(res.status, query).toBe(400);
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(body.type).toBe('error');
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toContain(name);
    }
  });

  it('models.list and retrieve with a key show what its guardrails allow; without a valid key, every chat model', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const g = await mgmt('POST', '/guardrails', {
      name: 'claude only',
      allowed_models: ['test/opus', 'test/claude'],
    });
    expect(g.status).toBe(201);
    const key = await mgmt('POST', '/keys', { name: 'restricted' });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const ids = async (apiKey: string) => {
      const c = new Anthropic({ baseURL: `${gw.url}/api`, apiKey, maxRetries: 0 });
      const out: string[] = [];
      for await (const m of c.models.list({ limit: 100 })) out.push(m.id);
      return out;
    };
    expect((await ids(key.body.key)).sort()).toEqual(['test/claude', 'test/opus']);
    // Retrieving one follows the same policy: a refused model is not found for that key.
    const restricted = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: key.body.key, maxRetries: 0 });
    expect((await restricted.models.retrieve('test/opus')).id).toBe('test/opus');
    const refused = chatIds.find((id) => id !== 'test/opus' && id !== 'test/claude') as string;
    const hidden = await restricted.models.retrieve(refused).catch((e: unknown) => e);
    expect(hidden).toBeInstanceOf(Anthropic.NotFoundError);
    const open = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    expect((await open.models.retrieve(refused)).id).toBe(refused);
    // The key without a guardrail, and a key Gatehouse does not know (the list is public): all.
    expect(await ids(gw.apiKey)).toEqual(chatIds);
    expect(await ids('sk-not-a-gatehouse-key')).toEqual(chatIds);
    // The OpenRouter-shaped list stays the public catalog whoever asks.
    const plain = (await (
      await fetch(`${gw.url}/api/v1/models`, { headers: { authorization: `Bearer ${key.body.key}` } })
    ).json()) as { data: unknown[] };
    expect(plain.data.length).toBeGreaterThan(2);
  });

  it('without anthropic-version the same routes answer in OpenRouter’s shapes, as before', async () => {
    const list = (await (await fetch(`${gw.url}/api/v1/models`)).json()) as Record<string, unknown>;
    expect(Object.keys(list).sort()).toEqual(['data', 'links', 'total_count']);
    const one = (await (await fetch(`${gw.url}/api/v1/models/test%2Fopus`)).json()) as Record<
      string,
      unknown
    >;
    expect(one).toMatchObject({ id: 'test/opus', name: 'Test Opus', object: 'model' });
    const missing = await fetch(`${gw.url}/api/v1/models/test%2Fnone`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 404 } });
  });
});
