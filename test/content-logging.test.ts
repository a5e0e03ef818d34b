import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Content logging against a real gateway: off by default, turned on per workspace, the content
 * of chat, messages and responses calls kept (streamed or not, translated or passed through) as
 * the provider got it and the caller got it back, redactions included; read back with
 * GET /generation/content (and the official SDK), only by its own workspace and organization;
 * expired content purged.
 */
describe.each(databases)('content logging (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  let api: ReturnType<typeof client>;
  let workspaceId: string;

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
    api = client(gw.url, gw.apiKey);
    const key = await api('GET', '/key');
    workspaceId = key.body.data.workspace_id;
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const rows = async (organizationId?: string) => {
    let q = gw.services.db.selectFrom('generation_contents').selectAll();
    if (organizationId) q = q.where('organization_id', '=', organizationId);
    return q.execute();
  };

  /** The kept content of generation `id`, once it was written (polled: it is written after the answer). */
  async function content(id: string, as = api) {
    const res = await vi.waitFor<{ status: number; body: any; text: string }>(
      async () => {
        await gw.services.contentLog.flush();
        const r = await as('GET', `/generation/content?id=${encodeURIComponent(id)}`);
        expect(r.status, r.text).toBe(200);
        return r;
      },
      { timeout: 5000, interval: 20 },
    );
    // It may have been read from the queue: written now.
    await gw.services.contentLog.flush();
    return res.body.data;
  }

  const generationIdOf = (res: { headers: Headers }) =>
    res.headers.get('x-gatehouse-generation-id') as string;

  it('workspace settings: off with 30 days by default; bad retention is a 400', async () => {
    const ws = await mgmt('GET', `/workspaces/${workspaceId}`);
    expect(ws.body.data).toMatchObject({ content_logging: false, content_retention_days: 30 });
    for (const days of [0, -1, 366, 1.5, 'ten', null]) {
      const res = await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_retention_days: days });
      expect(res.status, JSON.stringify(days)).toBe(400);
      expect(res.body.error.message).toContain('content_retention_days');
    }
    const bad = await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: 'yes' });
    expect(bad.status).toBe(400);
    const created = await mgmt('POST', '/workspaces', {
      name: 'Logged',
      slug: 'logged',
      content_logging: true,
      content_retention_days: 3,
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ content_logging: true, content_retention_days: 3 });
    expect((await mgmt('GET', `/workspaces/${workspaceId}`)).body.data.content_logging).toBe(false);
  });

  it('is described in the OpenAPI document', async () => {
    const doc: any = await (await fetch(`${gw.url}/api/v1/openapi.json`)).json();
    expect(doc.paths['/generation/content'].get.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'id', in: 'query', required: true })]),
    );
    expect(doc.components.schemas.GenerationContent.properties).toHaveProperty('output');
    expect(doc.components.schemas.Workspace.properties).toHaveProperty('content_logging');
    expect(doc.components.schemas.Workspace.properties).toHaveProperty('content_retention_days');
  });

  it('keeps nothing while content logging is off', async () => {
    const res = await api('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'not to be kept' }],
    });
    expect(res.status).toBe(200);
    // Another workspace that keeps content: once its call is kept, the first one had its turn.
    const logged = await mgmt('POST', '/keys', { name: 'logged', workspace_id: 'logged' });
    expect(logged.status).toBe(201);
    const loggedApi = client(gw.url, logged.body.key);
    const kept = await loggedApi('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'kept' }],
    });
    await content(generationIdOf(kept), loggedApi);
    const all = await rows(gw.organizationId);
    expect(all.map((r) => r.generation_id)).toEqual([generationIdOf(kept)]);
    expect((await api('GET', `/generation/content?id=${generationIdOf(res)}`)).status).toBe(404);
  });

  describe('on', () => {
    beforeAll(async () => {
      const on = await mgmt('PATCH', `/workspaces/${workspaceId}`, {
        content_logging: true,
        content_retention_days: 7,
      });
      expect(on.status).toBe(200);
      expect(on.body.data).toMatchObject({ content_logging: true, content_retention_days: 7 });
    });

    const reply = {
      text: 'the answer is 42',
      reasoning: 'thinking it over',
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    };

    // Endpoint, model, whether the provider speaks the caller's format (a pass-through lane).
    const cases = [
      { path: '/chat/completions', model: 'gatehouse/echo', lane: false },
      { path: '/chat/completions', model: 'test/gpt', lane: true },
      { path: '/chat/completions', model: 'test/claude', lane: false },
      { path: '/messages', model: 'test/claude', lane: true },
      { path: '/messages', model: 'test/gpt', lane: false },
      { path: '/responses', model: 'test/gpt', lane: true },
      { path: '/responses', model: 'test/claude', lane: false },
      { path: '/completions', model: 'test/gpt', lane: true },
      { path: '/completions', model: 'test/claude', lane: false },
    ];
    const bodyOf = (path: string, model: string, prompt: string, stream: boolean) =>
      path === '/responses'
        ? {
            model,
            input: [{ role: 'user', content: prompt }],
            instructions: 'be brief',
            stream,
            store: false,
          }
        : path === '/messages'
          ? {
              model,
              max_tokens: 100,
              system: 'be brief',
              messages: [{ role: 'user', content: prompt }],
              stream,
            }
          : path === '/completions'
            ? { model, prompt, stream }
            : { model, messages: [{ role: 'user', content: prompt }], stream };

    for (const c of cases)
      for (const stream of [false, true])
        it(`${c.path} ${c.model} (${c.lane ? 'pass-through' : 'translated'}${stream ? ', streamed' : ''}): input and answer kept`, async () => {
          const echo = c.model === 'gatehouse/echo';
          if (!echo) mock.enqueue({ reply });
          const prompt = `question for ${c.path} ${stream}`;
          const res = await api('POST', c.path, bodyOf(c.path, c.model, prompt, stream));
          expect(res.status, res.text).toBe(200);
          expect(res.headers.get('x-gatehouse-route')).toBe(c.lane ? 'passthrough' : 'translated');
          const data = await content(generationIdOf(res));
          expect(JSON.stringify(data.input)).toContain(prompt);
          if (c.path !== '/chat/completions' && c.path !== '/completions')
            expect(JSON.stringify(data.input)).toContain('be brief');
          expect(data.error).toBeNull();
          if (echo) {
            expect(data.output.completion).toContain(prompt);
            return;
          }
          expect(data.output.completion).toBe(reply.text);
          // A legacy completion's answer has no reasoning (translated, the model's is kept).
          if (!(c.path === '/completions' && c.lane)) expect(data.output.reasoning).toBe(reply.reasoning);
          // Secrets never: the operator's provider key is in no kept content.
          expect(JSON.stringify(data)).not.toMatch(/sk-operator/);
        });

    it('tool calls are kept, streamed and not', async () => {
      for (const stream of [false, true]) {
        mock.enqueue({
          reply: { tool_calls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }] },
        });
        const res = await api('POST', '/messages', bodyOf('/messages', 'test/claude', 'weather?', stream));
        expect(res.status).toBe(200);
        const data = await content(generationIdOf(res));
        expect(data.output.tool_calls).toHaveLength(1);
        expect(data.output.tool_calls[0].function.name).toBe('get_weather');
        expect(JSON.parse(data.output.tool_calls[0].function.arguments)).toEqual({ city: 'Paris' });
      }
    });

    it('a pass-through caller finds the content by the provider id it saw too', async () => {
      mock.enqueue({ reply });
      const res = await api(
        'POST',
        '/chat/completions',
        bodyOf('/chat/completions', 'test/gpt', 'by id', false),
      );
      expect(res.body.id).toMatch(/^chatcmpl-/);
      await content(generationIdOf(res));
      await gw.services.accountant.flush();
      const byUpstreamId = await api('GET', `/generation/content?id=${res.body.id}`);
      expect(byUpstreamId.status).toBe(200);
      expect(byUpstreamId.body.data.output.completion).toBe(reply.text);
    });

    it('keeps content as redacted by the content filters, on the request and on the answer', async () => {
      const key = await mgmt('POST', '/keys', { name: 'redacted' });
      const g = await mgmt('POST', '/guardrails', {
        name: 'redact codes',
        content_filters: [{ pattern: 'code-[0-9]+', action: 'redact', label: 'code', apply_to: 'both' }],
      });
      await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
        key_hashes: [key.body.data.hash],
      });
      const redacted = client(gw.url, key.body.key);
      for (const [model, stream] of [
        ['test/gpt', false],
        ['test/gpt', true],
        ['test/claude', false],
        ['test/claude', true],
      ] as const) {
        mock.enqueue({ reply: { text: 'your answer is code-999 indeed' } });
        const res = await redacted('POST', '/chat/completions', {
          model,
          messages: [{ role: 'user', content: 'my code-1234 please' }],
          stream,
        });
        expect(res.status, res.text).toBe(200);
        expect(res.text).not.toContain('code-999');
        const data = await content(generationIdOf(res), redacted);
        const kept = JSON.stringify(data);
        expect(kept).not.toContain('code-1234');
        expect(kept).not.toContain('code-999');
        expect(kept).toContain('[REDACTED:');
        expect(data.output.completion).toMatch(/^your answer is \[REDACTED:\w+\] indeed$/);
      }
    });

    it('a stream that fails after it started keeps what came and the error', async () => {
      mock.enqueue({ reply: { text: 'partial answer that goes on' }, dieAfterEvents: 3 });
      const res = await api(
        'POST',
        '/chat/completions',
        bodyOf('/chat/completions', 'test/claude', 'cut', true),
      );
      expect(res.status).toBe(200);
      const data = await content(generationIdOf(res));
      expect(data.error).toMatchObject({ status: expect.any(Number) });
      expect(data.error.message).toBeTruthy();
    });

    /** A transcription of `audio` uploaded as OpenAI's form (the `openai` client's way). */
    const transcribe = (audio: Buffer, fields: Record<string, string>) => {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      form.append('file', new Blob([audio], { type: 'audio/wav' }), 'clip.wav');
      return fetch(`${gw.url}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}` },
        body: form,
      });
    };

    it('rerank, speech and transcriptions: the request kept (never the audio), the ranking, a note of the audio, the text', async () => {
      const ranked = await api('POST', '/rerank', {
        model: 'gatehouse/rerank',
        query: 'purring cats',
        documents: ['Dogs bark.', 'Cats purr.'],
        top_n: 2,
        user: 'not content',
      });
      expect(ranked.status).toBe(200);
      const rerank = await content(generationIdOf(ranked));
      expect(rerank.input).toEqual({
        messages: [
          {
            model: expect.any(String),
            query: 'purring cats',
            documents: ['Dogs bark.', 'Cats purr.'],
            top_n: 2,
          },
        ],
      });
      const ranking = ranked.body.results.map((r: { index: number; relevance_score: number }) => ({
        index: r.index,
        relevance_score: r.relevance_score,
      }));
      expect(JSON.parse(rerank.output.completion)).toEqual(ranking);
      expect(ranking[0].index).toBe(1);

      const spoken = await fetch(`${gw.url}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gatehouse/speech', input: 'say this', voice: 'alloy' }),
      });
      const wav = Buffer.from(await spoken.arrayBuffer());
      const speech = await content(spoken.headers.get('x-gatehouse-generation-id') as string);
      expect(speech.input).toEqual({
        messages: [{ model: expect.any(String), input: 'say this', voice: 'alloy' }],
      });
      expect(speech.output.completion).toBe(`[audio/wav audio, ${wav.length} bytes, not kept]`);

      const audio = Buffer.alloc(40_000, 7);
      const heard = await transcribe(audio, {
        model: 'gatehouse/transcribe',
        prompt: 'a clip',
        language: 'en',
      });
      expect(heard.status).toBe(200);
      const { text } = (await heard.json()) as { text: string };
      const transcription = await content(heard.headers.get('x-gatehouse-generation-id') as string);
      expect(transcription.input).toEqual({
        messages: [
          {
            model: expect.any(String),
            prompt: 'a clip',
            language: 'en',
            file: { filename: 'audio.wav', content_type: 'audio/wav', bytes: 40_000, kept: false },
          },
        ],
      });
      expect(transcription.output.completion).toBe(text);
      // Neither the audio nor where the upload was saved.
      const stored = JSON.stringify(await rows(gw.organizationId));
      expect(stored).not.toContain(audio.toString('base64').slice(0, 40));
      expect(stored).not.toContain('"path"');
    });

    it('is read with the official SDK (response validation on)', async () => {
      mock.enqueue({ reply });
      const res = await api(
        'POST',
        '/chat/completions',
        bodyOf('/chat/completions', 'test/gpt', 'sdk prompt', false),
      );
      const id = generationIdOf(res);
      await content(id);
      const sdk = new OpenRouter({
        serverURL: `${gw.url}/api/v1`,
        apiKey: gw.apiKey,
        retryConfig: { strategy: 'none' },
      });
      const got = await sdk.generations.listGenerationContent({ id });
      expect(got.data.error).toBeNull();
      expect(got.data.output.completion).toBe(reply.text);
      expect(JSON.stringify(got.data.input)).toContain('sdk prompt');
      await expect(sdk.generations.listGenerationContent({ id: 'gen-0-nope' })).rejects.toMatchObject({
        statusCode: 404,
      });
    });

    it('only its workspace (API keys) and its organization (management keys) read it', async () => {
      const res = await api('POST', '/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'private words' }],
      });
      const id = generationIdOf(res);
      await content(id);
      expect((await mgmt('GET', `/generation/content?id=${id}`)).status).toBe(200);
      await gw.services.accountant.flush();
      // The generation says where its content is, to those who may read it.
      const link = `/api/v1/generation/content?id=${id}`;
      expect((await api('GET', `/generation?id=${id}`)).body.data.content_url).toBe(link);
      expect((await mgmt('GET', `/generation?id=${id}`)).body.data.content_url).toBe(link);
      const otherWs = await mgmt('POST', '/keys', { name: 'other ws', workspace_id: 'logged' });
      const other = await makeOrganization(gw.url, `Other ${db}`);
      for (const key of [otherWs.body.key, other.apiKey, other.managementKey]) {
        const r = await client(gw.url, key)('GET', `/generation/content?id=${id}`);
        expect(r.status).toBe(404);
        expect(r.text).not.toContain('private words');
      }
      // Workspace "logged" reads the organization's generation, not its content.
      expect(
        (await client(gw.url, otherWs.body.key)('GET', `/generation?id=${id}`)).body.data.content_url,
      ).toBeNull();
      expect((await client(gw.url)('GET', `/generation/content?id=${id}`)).status).toBe(401);
      expect((await api('GET', '/generation/content')).status).toBe(400);
    });

    it('expired content is purged by the retention sweep, and not served after', async () => {
      const res = await api('POST', '/chat/completions', {
        model: 'gatehouse/echo',
        messages: [{ role: 'user', content: 'short-lived' }],
      });
      const id = generationIdOf(res);
      await content(id);
      const day = 86_400_000;
      const log = gw.services.contentLog;
      await log.purgeExpired(Date.now() + 6 * day);
      expect((await rows()).some((r) => r.generation_id === id)).toBe(true);
      await log.purgeExpired(Date.now() + 8 * day);
      expect((await rows()).some((r) => r.generation_id === id)).toBe(false);
      expect((await api('GET', `/generation/content?id=${id}`)).status).toBe(404);
    });
  });

  it('turned off again, keeps nothing more', async () => {
    const off = await mgmt('PATCH', `/workspaces/${workspaceId}`, { content_logging: false });
    expect(off.body.data.content_logging).toBe(false);
    const before = (await rows(gw.organizationId)).length;
    const res = await api('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'after' }],
    });
    expect(res.status).toBe(200);
    const ranked = await api('POST', '/rerank', { model: 'gatehouse/rerank', query: 'q', documents: ['a'] });
    expect(ranked.status).toBe(200);
    const spoken = await api('POST', '/audio/speech', { model: 'gatehouse/speech', input: 'after' });
    expect(spoken.status).toBe(200);
    const heard = await api('POST', '/audio/transcriptions', {
      model: 'gatehouse/transcribe',
      input_audio: { data: Buffer.alloc(3000).toString('base64'), format: 'wav' },
    });
    expect(heard.status).toBe(200);
    await gw.services.contentLog.flush();
    expect((await rows(gw.organizationId)).length).toBe(before);
  });

  it('deleting a workspace deletes its kept content', async () => {
    const ws = await mgmt('POST', '/workspaces', { name: 'Doomed', slug: 'doomed', content_logging: true });
    const key = await mgmt('POST', '/keys', { name: 'doomed', workspace_id: ws.body.data.id });
    const doomed = client(gw.url, key.body.key);
    const res = await doomed('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'gone soon' }],
    });
    await content(generationIdOf(res), doomed);
    expect((await mgmt('DELETE', `/keys/${key.body.data.hash}`)).status).toBe(200);
    expect((await mgmt('DELETE', `/workspaces/${ws.body.data.id}`)).status).toBe(200);
    expect((await rows()).some((r) => r.workspace_id === ws.body.data.id)).toBe(false);
    expect((await mgmt('GET', `/generation/content?id=${generationIdOf(res)}`)).status).toBe(404);
  });
});
