import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

const script = (s: object) => `gatehouse:${JSON.stringify(s)}`;

describe.each(databases)('inference endpoints on the development provider (%s)', (db) => {
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    gw = await startTestGateway(db);
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    // The Anthropic client appends /v1/messages itself.
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => gw?.stop());

  it('answers /chat/completions with the seed fields: provider, gateway_metadata, full usage with cost', async () => {
    const res: any = await openai.chat.completions.create({
      model: 'gatehouse/echo',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there gateway' },
      ],
    });
    expect(res.choices[0].message.content).toBe('hello there gateway');
    expect(res.provider).toBe('gatehouse');
    expect(res.model).toBe('gatehouse/echo');
    expect(res.id).toMatch(/^gen-/);
    // 5 prompt words, 3 completion words; prices $1 / $2 per million tokens.
    expect(res.usage).toMatchObject({
      prompt_tokens: 5,
      completion_tokens: 3,
      total_tokens: 8,
      is_byok: false,
    });
    expect(res.usage.cost).toBeCloseTo((5 * 1 + 3 * 2) / 1e6, 12);
    expect(res.gateway_metadata).toMatchObject({
      attempt: 1,
      is_byok: false,
      requested: 'gatehouse/echo',
      endpoints: {
        total: 1,
        available: [{ model: 'gatehouse/echo', provider: 'gatehouse', selected: true }],
      },
    });
  });

  it('streams /chat/completions and ends with a usage chunk', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
    });
    let text = '';
    let usage: any = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('one two three four');
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 4 });
    expect(usage.cost).toBeGreaterThan(0);
  });

  it('serves scripted tool calls through /chat/completions and /messages', async () => {
    const content = script({ tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] });
    const tools = [
      { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object' } } },
    ];
    const chat = await openai.chat.completions.create({
      model: 'gatehouse/scripted',
      messages: [{ role: 'user', content }],
      tools,
    });
    expect(chat.choices[0]?.finish_reason).toBe('tool_calls');
    const call = chat.choices[0]?.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    expect(JSON.parse(call?.type === 'function' ? call.function.arguments : '')).toEqual({ city: 'Paris' });

    const msg = await anthropic.messages.create({
      model: 'gatehouse/scripted',
      max_tokens: 100,
      messages: [{ role: 'user', content }],
      tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
    });
    expect(msg.stop_reason).toBe('tool_use');
    const block = msg.content.find((b) => b.type === 'tool_use');
    expect(block).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
  });

  it('streams /messages in the Anthropic event format', async () => {
    const stream = anthropic.messages.stream({
      model: 'gatehouse/echo',
      max_tokens: 50,
      system: 'ignored by echo',
      messages: [{ role: 'user', content: 'stream me please' }],
    });
    const final = await stream.finalMessage();
    expect(final.content).toHaveLength(1);
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'stream me please' });
    expect(final.usage.output_tokens).toBe(3);
  });

  it('takes the key from x-api-key, as Anthropic clients before 1.x and Claude Code send it', async () => {
    const messages = (headers: Record<string, string>) =>
      fetch(`${gw.url}/api/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
        body: JSON.stringify({
          model: 'gatehouse/echo',
          max_tokens: 20,
          messages: [{ role: 'user', content: 'keyed by header' }],
        }),
      });
    const ok = await messages({ 'x-api-key': gw.apiKey });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { content: unknown[] }).content[0]).toMatchObject({
      type: 'text',
      text: 'keyed by header',
    });

    const wrong = await messages({ 'x-api-key': `sk-gh-v1-${'0'.repeat(64)}` });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toMatch(/Invalid/);
    // An Authorization header is the one that counts when both are sent.
    const both = await messages({ authorization: 'Bearer not-a-key', 'x-api-key': gw.apiKey });
    expect(both.status).toBe(401);
  });

  it('answers /responses, streaming and not', async () => {
    const res = await openai.responses.create({ model: 'gatehouse/echo', input: 'respond in kind' });
    expect(res.output_text).toBe('respond in kind');
    const stream = await openai.responses.create({
      model: 'gatehouse/echo',
      input: 'stream in kind',
      stream: true,
    });
    let done: any = null;
    let text = '';
    for await (const e of stream) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') done = e.response;
    }
    expect(text).toBe('stream in kind');
    expect(done.usage.output_tokens).toBe(3);
  });

  it('answers /embeddings with deterministic vectors', async () => {
    const a = await openai.embeddings.create({ model: 'gatehouse/embed', input: ['alpha beta', 'gamma'] });
    const b = await openai.embeddings.create({ model: 'gatehouse/embed', input: 'alpha beta' });
    expect(a.data).toHaveLength(2);
    expect(a.data[0]?.embedding).toEqual(b.data[0]?.embedding);
    expect(a.usage.prompt_tokens).toBe(3);
  });

  it('lists models with pricing and providers, labelling the development provider', async () => {
    const res = await client(gw.url)('GET', '/models');
    const echo = res.body.data.find((m: any) => m.id === 'gatehouse/echo');
    expect(echo).toMatchObject({
      development: true,
      pricing: { prompt: '0.000001', completion: '0.000002' },
    });
    expect(echo.providers[0]).toMatchObject({ slug: 'gatehouse', development: true });
  });

  it('records every call as a generation and bills it to the key, the credits and GET /generation', async () => {
    const res: any = await openai.chat.completions.create({
      model: 'gatehouse/scripted',
      messages: [
        {
          role: 'user',
          content: script({ text: 'ok', usage: { prompt_tokens: 1000, completion_tokens: 500 } }),
        },
      ],
    });
    expect(res.usage.cost).toBeCloseTo(0.002, 12);
    const call = client(gw.url, gw.apiKey);
    const gen = await call('GET', `/generation?id=${res.id}`);
    expect(gen.status).toBe(200);
    expect(gen.body.data).toMatchObject({
      id: res.id,
      tokens_prompt: 1000,
      tokens_completion: 500,
      provider_name: 'gatehouse',
    });
    expect(gen.body.data.total_cost).toBeCloseTo(0.002, 12);

    await gw.services.accountant.flush();
    const rows = await gw.services.db.selectFrom('generations').select(['cost_usd']).execute();
    const sum = rows.reduce((s, r) => s + r.cost_usd, 0);
    const credits = await client(gw.url, gw.managementKey)('GET', '/credits');
    expect(credits.body.data.total_usage).toBeCloseTo(sum, 10);
    const key = await call('GET', '/key');
    expect(key.body.data.usage).toBeCloseTo(sum, 10);
    expect(key.body.data.usage_daily).toBeCloseTo(sum, 10);
  });

  it('refuses management keys, unknown models and untranslatable requests with clear errors', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const r1 = await mgmt('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(r1.status).toBe(403);
    const call = client(gw.url, gw.apiKey);
    const r2 = await call('POST', '/chat/completions', {
      model: 'nobody/nothing',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(r2.status).toBe(404);
    expect(r2.body.error.message).toMatch(/nobody\/nothing/);
    const r3 = await call('POST', '/chat/completions', { model: 'gatehouse/echo', messages: [] });
    expect(r3.status).toBe(400);
    const r4 = await call('POST', '/messages', {
      model: 'gatehouse/echo',
      max_tokens: 5,
      container: 'cntr_1',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(r4.status).toBe(400);
    expect(r4.body.error.message).toMatch(/^container: code-execution containers/);
  });

  it('writes pending accounting before a graceful shutdown completes', async () => {
    const res: any = await openai.chat.completions.create({
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'remember me' }],
    });
    gw = await gw.restart(); // closes the server right after the response, then starts again
    const row = await gw.services.db
      .selectFrom('generations')
      .selectAll()
      .where('id', '=', res.id)
      .executeTakeFirst();
    expect(row).toMatchObject({ id: res.id, status: 'success', prompt_tokens: 2, completion_tokens: 2 });
  });
});
