import { OpenRouter } from '@openrouter/sdk';
import { BadRequestResponseError, NotFoundResponseError } from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, makeOrganization } from './support/http.js';

/**
 * POST /generation/feedback (OpenRouter's generations.submitFeedback) over a real gateway: the
 * official SDK sends it and reads it back through GET /generation; bad bodies are 400s naming the
 * field; a key outside the generation's workspace or organization gets a 404 and stores nothing;
 * a generation takes at most 100 entries, also when submissions race.
 */
describe.each(databases)('generation feedback (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  let api: ReturnType<typeof client>;
  let mgmt: ReturnType<typeof client>;
  let ws2Key: string;
  let other: Awaited<ReturnType<typeof makeOrganization>>;

  /** A chat through the development model; its generation id. */
  async function generation(key = gw.apiKey): Promise<string> {
    const res = await client(gw.url, key)('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status, res.text).toBe(200);
    return res.body.id;
  }
  const stored = (generationId: string) =>
    gw.services.db
      .selectFrom('generation_feedback')
      .selectAll()
      .where('generation_id', '=', generationId)
      .execute();

  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    api = client(gw.url, gw.apiKey);
    mgmt = client(gw.url, gw.managementKey);
    const ws2 = (await mgmt('POST', '/workspaces', { name: 'Second', slug: 'second' })).body.data.id;
    ws2Key = (await mgmt('POST', '/keys', { name: 'ws2', workspace_id: ws2 })).body.key;
    other = await makeOrganization(gw.url, `Other ${db}`);
  });
  afterAll(() => gw?.stop());

  it('the SDK’s submitFeedback is recorded and GET /generation shows it, newest first', async () => {
    const id = await generation();
    // Sent straight after the call: the generation may still be queued for writing.
    const res = await sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: id, category: 'incorrect_response', comment: 'wrong' },
    });
    expect(res).toEqual({ data: { success: true } });
    await sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: id, category: 'latency' },
    });

    const shown = await api('GET', `/generation?id=${id}`);
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body.data.feedback).toEqual([
      { category: 'latency', comment: null, created_at: expect.any(String) },
      { category: 'incorrect_response', comment: 'wrong', created_at: expect.any(String) },
    ]);
    // The SDK's own read still validates with the field added.
    const gen = await sdk.generations.getGeneration({ id });
    expect(gen.data.id).toBe(id);

    // Who sent it is kept (the key's hash, its user); the entries show only what was said.
    const rows = await stored(id);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      organization_id: gw.organizationId,
      key_hash: shown.body.data.api_key_hash,
      user_id: gw.ownerUserId,
      workspace_id: shown.body.data.workspace_id,
    });

    // A generation without feedback shows [].
    const none = await api('GET', `/generation?id=${await generation()}`);
    expect(none.body.data.feedback).toEqual([]);
  });

  it('refuses a bad body with a 400 that names the field, and stores nothing', async () => {
    const id = await generation();
    const bad = await api('POST', '/generation/feedback', { generation_id: id, category: 'slow' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe(400);
    expect(bad.body.error.message).toMatch(/category/);
    expect(bad.body.error.message).toContain(
      'latency, incoherence, incorrect_response, formatting, billing, api_error, other',
    );
    // The SDK sends an unknown category as it is (an open enum) and parses the 400.
    await expect(
      sdk.generations.submitFeedback({
        submitGenerationFeedbackRequest: { generationId: id, category: 'slow' as 'other' },
      }),
    ).rejects.toBeInstanceOf(BadRequestResponseError);

    const long = await api('POST', '/generation/feedback', {
      generation_id: id,
      category: 'other',
      comment: 'x'.repeat(2001),
    });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/comment/);
    for (const body of [
      { category: 'other' },
      { generation_id: '', category: 'other' },
      { generation_id: id },
      { generation_id: id, category: 'other', comment: { text: 'x' } },
    ]) {
      const res = await api('POST', '/generation/feedback', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(await stored(id)).toEqual([]);

    // 2,000 characters, null and extra fields are fine.
    for (const extra of [{ comment: 'y'.repeat(2000) }, { comment: null }, { rating: 5, tags: ['a'] }]) {
      const res = await api('POST', '/generation/feedback', {
        generation_id: id,
        category: 'other',
        ...extra,
      });
      expect(res.status, res.text).toBe(200);
    }
    expect(await stored(id)).toHaveLength(3);
  });

  it('answers 404 outside the generation’s workspace or organization, storing nothing', async () => {
    const id = await generation();
    const body = { generation_id: id, category: 'billing', comment: 'not mine' };
    for (const key of [ws2Key, other.apiKey, other.managementKey]) {
      const res = await client(gw.url, key)('POST', '/generation/feedback', body);
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.message).toBe('Generation not found');
    }
    const unknown = await api('POST', '/generation/feedback', { ...body, generation_id: 'gen-nope' });
    expect(unknown.status).toBe(404);
    await expect(
      new OpenRouter({
        serverURL: `${gw.url}/api/v1`,
        apiKey: other.apiKey,
        retryConfig: { strategy: 'none' },
      }).generations.submitFeedback({
        submitGenerationFeedbackRequest: { generationId: id, category: 'other' },
      }),
    ).rejects.toBeInstanceOf(NotFoundResponseError);
    expect(await stored(id)).toEqual([]);
    expect((await api('GET', `/generation?id=${id}`)).body.data.feedback).toEqual([]);

    // Inside their scope they may: workspace 2's key on its own call, the management key on any of
    // its organization's.
    const theirs = await generation(ws2Key);
    expect(
      (await client(gw.url, ws2Key)('POST', '/generation/feedback', { ...body, generation_id: theirs }))
        .status,
    ).toBe(200);
    expect((await mgmt('POST', '/generation/feedback', body)).status).toBe(200);
    expect(await stored(id)).toHaveLength(1);
  });

  it('keeps at most 100 entries per generation, also when submissions race: then 429', async () => {
    const id = await generation();
    const send = (i: number) =>
      api('POST', '/generation/feedback', { generation_id: id, category: 'other', comment: `#${i}` });
    for (let i = 0; i < 90; i += 10) {
      const batch = await Promise.all(Array.from({ length: 10 }, (_, j) => send(i + j)));
      expect(batch.map((r) => r.status)).toEqual(Array(10).fill(200));
    }
    // 20 at once for the last 10 places: exactly 10 get in.
    const race = await Promise.all(Array.from({ length: 20 }, (_, j) => send(90 + j)));
    const statuses = race.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(10).fill(200), ...Array(10).fill(429)]);
    const refused = race.find((r) => r.status === 429)!;
    expect(refused.body.error).toMatchObject({ code: 429, metadata: { limit: 100 } });
    expect(refused.headers.get('retry-after')).toBeNull();
    expect((await send(200)).status).toBe(429);

    const rows = await stored(id);
    expect(rows).toHaveLength(100);
    expect(rows.map((r) => r.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    // GET /generation shows the newest 20.
    const feedback = (await api('GET', `/generation?id=${id}`)).body.data.feedback;
    expect(feedback).toHaveLength(20);
    const newest = [...rows].sort((a, b) => b.seq - a.seq).slice(0, 20);
    expect(feedback.map((f: { comment: string }) => f.comment)).toEqual(newest.map((r) => r.comment));
  });
});
