import Anthropic from '@anthropic-ai/sdk';
import { OpenRouter } from '@openrouter/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, otherTenants } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Presets: saved from an inference body through the official `@openrouter/sdk` (its response
 * validation on), read back with every `presets` operation, and applied to calls that name them —
 * `@preset/<slug>`, `<model>@preset/<slug>` and `preset` — on every inference format, whether the
 * call passes through or is translated. What reaches the mock upstream is the evidence.
 */
describe.each(databases)('presets (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let sdk: OpenRouter;
  let openai: OpenAI;
  let call: ReturnType<typeof client>;
  /** The owner's second workspace's API key, and another organization's. */
  const others: { name: string; key: string }[] = [];
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: up.env });
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    call = client(gw.url, gw.apiKey);
    others.push(...(await otherTenants(gw, `Other ${db}`)));
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  it('saves versions from chat and Messages bodies and reads them back with every SDK operation', async () => {
    const first = await sdk.presets.createPresetsChatCompletions({
      slug: 'writer',
      chatRequest: {
        model: 'test/gpt',
        messages: [
          { role: 'system', content: 'You write haiku.' },
          { role: 'user', content: 'not kept' },
        ],
        temperature: 0.3,
        maxCompletionTokens: 50,
        seed: 7,
        stream: false,
      },
    });
    expect(first.data).toMatchObject({
      slug: 'writer',
      name: 'writer',
      status: 'active',
      workspaceId: expect.any(String),
      designatedVersion: {
        version: 1,
        config: { model: 'test/gpt', temperature: 0.3, max_tokens: 50, seed: 7 },
        systemPrompt: 'You write haiku.',
      },
    });
    expect(JSON.stringify(first.data.designatedVersion?.config)).not.toContain('not kept');

    const second = await sdk.presets.createPresetsMessages({
      slug: 'writer',
      messagesRequest: {
        model: 'test/claude',
        system: 'You are terse.',
        maxTokens: 99,
        temperature: 0.5,
        stopSequences: ['STOP'],
        messages: [{ role: 'user', content: 'not kept either' }],
      },
    });
    expect(second.data.id).toBe(first.data.id);
    expect(second.data.designatedVersion).toMatchObject({
      version: 2,
      config: { model: 'test/claude', temperature: 0.5, max_tokens: 99, stop: ['STOP'] },
      systemPrompt: 'You are terse.',
    });
    expect(second.data.designatedVersionId).toBe(second.data.designatedVersion?.id);

    const got = await sdk.presets.get({ slug: 'writer' });
    expect(got.data.designatedVersion?.version).toBe(2);
    const list = await sdk.presets.list({});
    expect(list.result.totalCount).toBe(1);
    expect(list.result.data.map((p) => p.slug)).toEqual(['writer']);
    const versions = await sdk.presets.listVersions({ slug: 'writer' });
    expect(versions.result.totalCount).toBe(2);
    expect(versions.result.data.map((v) => v?.version)).toEqual([1, 2]);
    const v1 = await sdk.presets.getVersion({ slug: 'writer', version: '1' });
    expect(v1.data?.config).toEqual({ model: 'test/gpt', temperature: 0.3, max_tokens: 50, seed: 7 });

    const third = await sdk.presets.createPresetsResponses({
      slug: 'thinker',
      responsesRequest: { model: 'test/gpt', instructions: 'Think first.', maxOutputTokens: 20, input: 'x' },
    });
    expect(third.data.designatedVersion).toMatchObject({
      version: 1,
      config: { model: 'test/gpt', max_tokens: 20 },
      systemPrompt: 'Think first.',
    });
    expect((await sdk.presets.list({ limit: 1 })).result).toMatchObject({
      totalCount: 2,
      data: [{ slug: 'thinker' }],
    });
  });

  it('@preset/<slug> on /chat/completions: the preset model, settings and system prompt reach the provider', async () => {
    mock.enqueue({ reply: { text: 'terse answer' } });
    const res = await openai.chat.completions.create({
      model: '@preset/writer',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.choices[0]?.message.content).toBe('terse answer');
    // test/claude is Anthropic's: the chat body was translated, the preset's fields with it.
    const sent = mock.requests[0];
    expect(sent?.format).toBe('anthropic-messages');
    expect(sent?.body).toMatchObject({
      model: 'claude-x',
      system: 'You are terse.',
      max_tokens: 99,
      temperature: 0.5,
      stop_sequences: ['STOP'],
    });
    const preset = await sdk.presets.get({ slug: 'writer' });
    const gen = await sdk.generations.getGeneration({ id: res.id });
    expect(gen.data.presetId).toBe(preset.data.id);
    expect(gen.data.model).toBe('test/claude');
  });

  it("@preset/<slug> on /messages passes through with the preset's fields and without the reference", async () => {
    mock.enqueue({ reply: { text: 'via messages' } });
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    // No max_tokens: the preset's completes the body (Anthropic requires one).
    const res = await anthropic.messages.create({
      model: '@preset/writer',
      messages: [{ role: 'user', content: 'hi' }],
    } as unknown as Anthropic.MessageCreateParamsNonStreaming);
    expect(res.content[0]).toMatchObject({ type: 'text', text: 'via messages' });
    const sent = mock.requests[0];
    expect(sent?.body).toEqual({
      model: 'claude-x',
      messages: [{ role: 'user', content: 'hi' }],
      system: 'You are terse.',
      max_tokens: 99,
      temperature: 0.5,
      stop_sequences: ['STOP'],
    });
  });

  it("a model named beside the preset, and the request's own settings, win over the preset's", async () => {
    mock.enqueue({ reply: { text: 'a' } }, { reply: { text: 'b' } });
    const bodies = [{ model: 'test/gpt@preset/writer' }, { model: 'test/gpt', preset: 'writer' }];
    for (const named of bodies) {
      const res = await call('POST', '/chat/completions', {
        ...named,
        temperature: 1,
        messages: [
          { role: 'system', content: 'my own system prompt' },
          { role: 'user', content: 'hi' },
        ],
      });
      expect(res.status).toBe(200);
    }
    for (const sent of mock.requests) {
      // test/gpt is OpenAI's: a lane, the body as sent but completed (and never the `preset` field).
      expect(sent.body).toEqual({
        model: 'gpt-x',
        temperature: 1,
        max_tokens: 99,
        stop: ['STOP'],
        messages: [
          { role: 'system', content: 'my own system prompt' },
          { role: 'user', content: 'hi' },
        ],
      });
    }
  });

  it('@preset/<slug> on /responses, streamed: instructions and output limit from the preset', async () => {
    mock.enqueue({ reply: { text: 'streamed' } });
    const stream = await openai.responses.create({
      model: '@preset/thinker',
      input: 'hi',
      stream: true,
      store: false,
    });
    let text = '';
    for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
    expect(text).toBe('streamed');
    expect(mock.requests[0]?.body).toMatchObject({
      model: 'gpt-x',
      instructions: 'Think first.',
      max_output_tokens: 20,
      input: 'hi',
    });
  });

  it("counts a preset's tokens as its calls would send them: its model and system prompt, no settings", async () => {
    mock.enqueue({ reply: { text: 'unused' } });
    const res = await call('POST', '/messages/count_tokens', {
      model: '@preset/writer',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status).toBe(200);
    expect(res.body.input_tokens).toEqual(expect.any(Number));
    // Anthropic's count endpoint takes no sampling settings or output limit.
    expect(mock.requests[0]?.path).toMatch(/count_tokens$/);
    expect(mock.requests[0]?.body).toEqual({
      model: 'claude-x',
      messages: [{ role: 'user', content: 'hi' }],
      system: 'You are terse.',
    });
  });

  it("an unknown preset is a 404 in the caller's format, before any upstream call", async () => {
    const chat = await call('POST', '/chat/completions', { model: '@preset/nope', messages: [] });
    expect(chat.status).toBe(404);
    expect(chat.body.error.message).toBe('Preset nope not found in this workspace');
    const messages = await call('POST', '/messages', {
      model: '@preset/nope',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(messages.status).toBe(404);
    expect(messages.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const bad = await call('POST', '/chat/completions', { model: 'test/gpt', preset: 5, messages: [] });
    expect(bad.status).toBe(400);
    expect(mock.requests).toHaveLength(0);
  });

  it("a preset in a `models` fallback list is a 400 in the caller's format naming the entry, before any upstream call", async () => {
    const message = (i: number) =>
      `\`models[${i}]\`: a preset cannot be a fallback model; use \`preset\` or \`model\``;
    const chat = await call('POST', '/chat/completions', {
      model: 'test/gpt',
      models: ['test/gpt', '@preset/writer'],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(chat.status).toBe(400);
    expect(chat.body.error).toMatchObject({ code: 400, message: message(1) });
    // With a preset named in `model` too, and in the `<model>@preset/<slug>` form.
    const messages = await call('POST', '/messages', {
      model: '@preset/writer',
      models: ['test/claude@preset/writer'],
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(messages.status).toBe(400);
    expect(messages.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: message(0) },
    });
    const responses = await call('POST', '/responses', {
      model: 'test/gpt',
      models: ['test/claude', 'test/gpt', '@preset/thinker'],
      input: 'hi',
    });
    expect(responses.status).toBe(400);
    expect(responses.body.error.message).toBe(message(2));
    // Nor can a preset be saved with one.
    const saved = await call('POST', '/presets/fallback/chat/completions', {
      model: 'test/gpt',
      models: ['test/gpt', '@preset/writer'],
    });
    expect(saved.status).toBe(400);
    expect(saved.body.error.message).toBe(message(1));
    expect((await call('GET', '/presets/fallback')).status).toBe(404);
    expect(mock.requests).toHaveLength(0);
  });

  it("another workspace's or organization's key sees no preset and cannot use one", async () => {
    for (const other of others) {
      const theirs = client(gw.url, other.key);
      expect((await theirs('GET', '/presets')).body, other.name).toEqual({ data: [], total_count: 0 });
      expect((await theirs('GET', '/presets/writer')).status, other.name).toBe(404);
      expect((await theirs('GET', '/presets/writer/versions')).status, other.name).toBe(404);
      expect((await theirs('GET', '/presets/writer/versions/1')).status, other.name).toBe(404);
      expect((await theirs('DELETE', '/presets/writer')).status, other.name).toBe(404);
      const used = await theirs('POST', '/chat/completions', {
        model: '@preset/writer',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(used.status, other.name).toBe(404);
      // Their own preset of the same slug is theirs alone.
      const saved = await theirs('POST', '/presets/writer/chat/completions', {
        model: 'test/gpt',
        messages: [],
      });
      expect(saved.status, other.name).toBe(200);
      expect(saved.body.data.designated_version.version, other.name).toBe(1);
    }
    expect(mock.requests).toHaveLength(0);
    expect((await sdk.presets.get({ slug: 'writer' })).data.designatedVersion?.version).toBe(2);
  });

  it('refuses bad slugs and versions with 400s, and a management key with a 403', async () => {
    expect((await call('POST', '/presets/bad%20slug/chat/completions', { model: 'x' })).status).toBe(400);
    expect((await call('POST', '/presets/writer/chat/completions', [1, 2])).status).toBe(400);
    expect((await call('GET', '/presets/writer/versions/zero')).status).toBe(400);
    expect((await call('GET', '/presets/writer/versions/9')).status).toBe(404);
    expect((await call('GET', '/presets?limit=500')).status).toBe(400);
    const nested = await call('POST', '/presets/nested/chat/completions', { model: '@preset/writer' });
    expect(nested.status).toBe(400);
    expect(nested.body.error.message).toMatch(/cannot name another preset/);
    expect((await call('GET', '/presets/nested')).status).toBe(404);
    expect((await client(gw.url, gw.managementKey)('GET', '/presets')).status).toBe(403);
  });

  it('deletes a preset: calls naming it are then 404s, and the audit log has every save and the delete', async () => {
    expect((await call('DELETE', '/presets/thinker')).body).toEqual({ deleted: true });
    expect((await call('GET', '/presets/thinker')).status).toBe(404);
    const used = await call('POST', '/responses', { model: '@preset/thinker', input: 'hi' });
    expect(used.status).toBe(404);
    const audit = await client(gw.url, gw.managementKey)('GET', '/audit-log?resource_type=preset&limit=100');
    expect(audit.status).toBe(200);
    // This workspace's writes that were made (refused attempts are listed too, with their status).
    const workspace = (await sdk.presets.get({ slug: 'writer' })).data.workspaceId;
    const mine = audit.body.data.filter((e: any) => e.workspace_id === workspace && e.status === 200);
    const actions = mine.map((e: any) => `${e.action} ${e.resource.id}`).sort();
    expect(actions).toEqual([
      'preset.delete thinker',
      'preset.save thinker',
      'preset.save writer',
      'preset.save writer',
    ]);
    const del = mine.find((e: any) => e.action === 'preset.delete');
    expect(del.before).toMatchObject({ slug: 'thinker', designated_version: { version: 1 } });
    expect(del.actor.kind).toBe('api_key');
  });
});
