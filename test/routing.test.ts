import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const MODELS = { openai: 'test/gpt', anthropic: 'test/claude', google: 'test/gemini' } as const;

describe('routing through real upstream wire formats', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', {
      env: { ...up.env, GATEHOUSE_UPSTREAM_TIMEOUT_MS: '700', GATEHOUSE_CREDITS: 'enforce' },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const reply = { text: 'upstream says hi', usage: { prompt_tokens: 20, completion_tokens: 6 } };

  describe.each(Object.entries(MODELS))('provider %s', (_kind, model) => {
    it('serves /chat/completions, streaming and not, with the system prompt upstream', async () => {
      mock.enqueue({ reply }, { reply });
      const res: any = await openai.chat.completions.create({
        model,
        messages: [
          { role: 'system', content: 'you are terse' },
          { role: 'user', content: 'hi' },
        ],
      });
      expect(res.choices[0].message.content).toBe('upstream says hi');
      expect(res.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 6 });
      expect(res.usage.cost).toBeCloseTo((20 * 1 + 6 * 2) / 1e6, 12);
      const sent = wireView(mock.requests[0]!);
      expect(sent.system).toBe('you are terse');
      expect(sent.model).toBe(model.replace('test/', '').replace(/^(gpt|claude|gemini)$/, '$1-x'));

      const stream = await openai.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      let text = '';
      let usage: any = null;
      for await (const c of stream) {
        text += c.choices[0]?.delta.content ?? '';
        if (c.usage) usage = c.usage;
      }
      expect(text).toBe('upstream says hi');
      expect(usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 6 });
    });

    it('serves /messages (Anthropic format), streaming and not, including tool calls', async () => {
      mock.enqueue(
        { reply: { tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }], usage: reply.usage } },
        { reply },
      );
      const msg = await anthropic.messages.create({
        model,
        max_tokens: 64,
        system: 'be kind',
        messages: [{ role: 'user', content: 'look it up' }],
        tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
      });
      expect(msg.stop_reason).toBe('tool_use');
      expect(msg.content.find((b) => b.type === 'tool_use')).toMatchObject({
        name: 'lookup',
        input: { q: 'x' },
      });
      expect(wireView(mock.requests[0]!).tools.map((t) => t.name)).toEqual(['lookup']);

      const final = await anthropic.messages
        .stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage();
      expect(final.content[0]).toMatchObject({ type: 'text', text: 'upstream says hi' });
      expect(final.usage.output_tokens).toBe(6);
    });

    it('serves /responses (OpenAI Responses format), streaming and not', async () => {
      mock.enqueue({ reply }, { reply });
      const res = await openai.responses.create({ model, input: 'hi', instructions: 'be brief' });
      expect(res.output_text).toBe('upstream says hi');
      expect(wireView(mock.requests[0]!).system).toBe('be brief');
      const final = await openai.responses.stream({ model, input: 'hi' }).finalResponse();
      // The stream helper does not compute output_text (OpenAI's own events do not carry it).
      const text = final.output
        .flatMap((item) => (item.type === 'message' ? item.content : []))
        .map((part) => (part.type === 'output_text' ? part.text : ''))
        .join('');
      expect(text).toBe('upstream says hi');
      expect(final.usage?.output_tokens).toBe(6);
    });
  });

  it('refuses what a provider format cannot carry, naming the field', async () => {
    const call = client(gw.url, gw.apiKey);
    const res = await call('POST', '/chat/completions', {
      model: 'test/claude',
      messages: [{ role: 'user', content: 'x' }],
      logprobs: true,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/logprobs/);
    expect(mock.requests).toHaveLength(0);
  });

  it('serves embeddings from an OpenAI-format upstream', async () => {
    mock.enqueue({ embeddings: [[0.1, 0.2, 0.3]] });
    const res = await openai.embeddings.create({ model: 'test/embed', input: 'hello' });
    // The client asks for base64 and decodes float32: compare at float32 precision.
    expect(res.data[0]?.embedding.map((x) => Math.round(x * 1e6) / 1e6)).toEqual([0.1, 0.2, 0.3]);
    expect(mock.requests[0]?.body.encoding_format).toBe('base64');
  });

  describe('fallbacks', () => {
    it.each([
      [
        '429 with Retry-After',
        { status: 429, headers: { 'retry-after': '1' }, error: { message: 'slow down' } },
      ],
      ['500', { status: 500, error: { message: 'boom' } }],
      ['a timeout', { delayMs: 1500, reply }],
    ])('moves to the next provider on %s', async (_name, failure) => {
      mock.enqueue({ ...failure, match: { path: /^\/openai\// } }, { reply, match: { path: /^\/groq\// } });
      const res: any = await openai.chat.completions.create({
        model: 'test/multi',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.provider).toBe('groq');
      expect(res.gateway_metadata.attempt).toBe(2);
      expect(res.gateway_metadata.endpoints.available).toEqual([
        { model: 'test/multi', provider: 'openai', selected: false },
        { model: 'test/multi', provider: 'groq', selected: true },
      ]);
      expect(mock.requests.map((r) => r.path.split('/')[1])).toEqual(['openai', 'groq']);
      const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(/gatehouse_fallbacks_total\{from_provider="openai"\} [1-9]/);
      expect(metrics).toMatch(
        /gatehouse_upstream_errors_total\{provider="openai",status="(429|500|0)"\} [1-9]/,
      );
      expect(metrics).toMatch(/gatehouse_tokens_total\{model="test\/multi",kind="prompt"\} [1-9]/);
      expect(metrics).toMatch(
        /gatehouse_upstream_duration_seconds_count\{provider="groq",outcome="ok"\} [1-9]/,
      );
    });

    it('does not fall back when allow_fallbacks is false, and reports the upstream status', async () => {
      mock.enqueue({
        status: 429,
        error: { message: 'slow down' },
        match: { path: /^\/openai\// },
        times: 2,
      });
      const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/multi',
        messages: [{ role: 'user', content: 'hi' }],
        provider: { allow_fallbacks: false },
      });
      expect(res.status).toBe(429);
      expect(res.body.error.message).toMatch(/openai.*slow down/);
      expect(mock.requests.every((r) => r.path.startsWith('/openai/'))).toBe(true);
    });

    it('retries the last provider once after its Retry-After', async () => {
      mock.enqueue({ status: 503, headers: { 'retry-after': '0' }, error: { message: 'busy' } }, { reply });
      const res: any = await openai.chat.completions.create({
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.choices[0].message.content).toBe('upstream says hi');
      expect(res.gateway_metadata.attempt).toBe(2);
    });

    it('does not retry the last provider after it timed out (the caller would wait twice the deadline)', async () => {
      mock.enqueue({ delayMs: 1500, reply, times: 2 });
      const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.status).toBe(502);
      expect(res.body.error.message).toMatch(/timed out after 700 ms/);
      expect(mock.requests).toHaveLength(1);
    });

    it('honours provider.order and provider.ignore', async () => {
      mock.enqueue({ reply }, { reply });
      const a: any = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/multi',
        messages: [{ role: 'user', content: 'hi' }],
        provider: { order: ['groq', 'openai'] },
      });
      expect(a.body.provider).toBe('groq');
      const b: any = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
        model: 'test/multi',
        messages: [{ role: 'user', content: 'hi' }],
        provider: { ignore: ['groq'] },
      });
      expect(b.body.provider).toBe('openai');
    });
  });

  it('surfaces a stream that dies mid-way to the caller and records partial usage', async () => {
    mock.enqueue({ reply: { text: 'one two three four five six seven eight' }, dieAfterEvents: 3 });
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'test/gpt',
        stream: true,
        messages: [{ role: 'user', content: 'count for me' }],
      }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
      .map((e) => JSON.parse(e.slice(6)));
    const last = events.at(-1);
    expect(last.error).toMatchObject({ code: 502 });
    expect(last.choices[0].finish_reason).toBe('error');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    await gw.services.accountant.flush();
    const gen = await gw.services.db
      .selectFrom('generations')
      .selectAll()
      .where('id', '=', last.id)
      .executeTakeFirstOrThrow();
    expect(gen).toMatchObject({ status: 'error', streamed: 1, usage_estimated: 1 });
    expect(gen.prompt_tokens).toBeGreaterThan(0);
    expect(gen.completion_tokens).toBeGreaterThan(0);
    expect(gen.cost_usd).toBeGreaterThan(0);
  });

  it('a caller that goes away cancels the upstream call, which is recorded as cancelled', async () => {
    const generations = async () =>
      gw.services.db.selectFrom('generations').selectAll().orderBy('created_at', 'desc').execute();
    const upstreamGotIt = (i: number) =>
      new Promise<void>((resolve) => {
        const check = () => (mock.requests[i] ? resolve() : setTimeout(check, 10));
        check();
      });
    for (const stream of [false, true]) {
      mock.reset();
      mock.enqueue(
        stream
          ? { reply: { text: 'one two three four five six' }, stallAfterEvents: 2 }
          : { reply, delayMs: 600 },
      );
      const leave = new AbortController();
      const res = fetch(`${gw.url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'test/gpt', stream, messages: [{ role: 'user', content: 'hi' }] }),
        signal: leave.signal,
      });
      await upstreamGotIt(0);
      const before = (await generations()).length;
      if (stream) {
        const body = (await res).body?.getReader();
        await body?.read(); // the first events arrived
      }
      await new Promise((r) => setTimeout(r, 50));
      leave.abort();
      await res.then((r) => r.text()).catch(() => {});
      // The gateway gives up on the upstream call at once (well before its 600 ms delay or a timeout).
      const t0 = Date.now();
      let rows = await generations();
      while (rows.length === before && Date.now() - t0 < 2000) {
        await new Promise((r) => setTimeout(r, 20)); // (the gateway runs in this process: let it see the close)
        await gw.services.accountant.flush();
        rows = await generations();
      }
      expect(Date.now() - t0).toBeLessThan(450);
      expect(rows.length, `stream: ${stream}`).toBe(before + 1);
      expect(rows[0], `stream: ${stream}`).toMatchObject({ status: 'cancelled', streamed: stream ? 1 : 0 });
    }
  });

  it('uses a BYOK credential in place of the operator key and says is_byok', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const cred = await mgmt('POST', '/byok', { provider: 'anthropic', key: 'sk-ant-byok-secret-123456' });
    expect(cred.status).toBe(201);
    try {
      mock.enqueue({ reply });
      const res: any = await openai.chat.completions.create({
        model: 'test/claude',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(wireView(mock.requests[0]!).auth).toEqual({
        header: 'x-api-key',
        key: 'sk-ant-byok-secret-123456',
      });
      expect(res.usage.is_byok).toBe(true);
      expect(res.gateway_metadata.is_byok).toBe(true);
      expect(res.usage.cost).toBe(0);
      expect(res.usage.cost_details.upstream_inference_cost).toBeGreaterThan(0);
      expect(JSON.stringify(res)).not.toContain('sk-ant-byok-secret');
    } finally {
      await mgmt('DELETE', `/byok/${cred.body.data.id}`);
    }
  });

  it('uses a BYOK credential only where it applies: not disabled, and for the keys it allows', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const other = await mgmt('POST', '/keys', { name: 'not allowed' });
    const cred = await mgmt('POST', '/byok', {
      provider: 'openai',
      key: 'sk-openai-byok-scoped-0000',
      allowed_api_key_hashes: [other.body.data.hash],
    });
    try {
      mock.enqueue({ reply }, { reply }, { reply });
      // The bootstrap key is not in allowed_api_key_hashes: the operator key is used.
      await openai.chat.completions.create({
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(wireView(mock.requests[0]!).auth?.key).toBe('sk-operator-openai-0000');
      // The allowed key gets the BYOK credential.
      await client(gw.url, other.body.key)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(wireView(mock.requests[1]!).auth?.key).toBe('sk-openai-byok-scoped-0000');
      // Disabled, it is not used even for the allowed key.
      await mgmt('PATCH', `/byok/${cred.body.data.id}`, { disabled: true });
      await client(gw.url, other.body.key)('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(wireView(mock.requests[2]!).auth?.key).toBe('sk-operator-openai-0000');
    } finally {
      await mgmt('DELETE', `/byok/${cred.body.data.id}`);
    }
  });

  it('echoes the upstream request body when asked, and never a key', async () => {
    mock.enqueue({ reply });
    const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
      model: 'test/gpt',
      messages: [{ role: 'user', content: 'echo me' }],
      temperature: 0.3,
      debug: { echo_upstream_body: true },
    });
    expect(res.body.debug.echo_upstream_body).toMatchObject({ model: 'gpt-x', temperature: 0.3 });
    expect(res.text).not.toContain('sk-operator');
  });

  it('answers 402 when the organization has no credits, unless the call is BYOK', async () => {
    const other = await makeOrganization(gw.url, 'Broke Org');
    const call = client(gw.url, other.apiKey);
    const res = await call('POST', '/chat/completions', {
      model: 'test/gpt',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status).toBe(402);
    expect(res.body.error.message).toMatch(/credit|balance/i);
    // It names the command that adds credits to this organization.
    expect(res.body.error.message).toContain(`gatehouse credits add --org ${other.organizationId}`);
    await client(gw.url, other.managementKey)('POST', '/byok', {
      provider: 'openai',
      key: 'sk-broke-byok-000000',
    });
    mock.enqueue({ reply });
    const byok = await call('POST', '/chat/completions', {
      model: 'test/gpt',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(byok.status).toBe(200);
    expect(byok.body.usage.is_byok).toBe(true);
  });
});

describe('provider.sort = throughput', () => {
  it('prefers the provider observed to produce completion tokens fastest, not the first to answer', async () => {
    const up = await startUpstreams();
    const gw = await startTestGateway('sqlite', { env: up.env });
    try {
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: gw.organizationId,
        amount_usd: 10,
      });
      const call = client(gw.url, gw.apiKey);
      const ask = (provider: Record<string, unknown>) =>
        call('POST', '/chat/completions', {
          model: 'test/multi',
          messages: [{ role: 'user', content: 'hi' }],
          provider,
        });
      // openai: 400 completion tokens in ~200 ms (~2,000/s); groq: 4 tokens in ~100 ms (~40/s),
      // although groq answers first.
      up.mock.enqueue(
        {
          delayMs: 200,
          reply: { text: 'long answer', usage: { prompt_tokens: 5, completion_tokens: 400 } },
          match: { path: /^\/openai\// },
        },
        {
          delayMs: 100,
          reply: { text: 'short', usage: { prompt_tokens: 5, completion_tokens: 4 } },
          match: { path: /^\/groq\// },
        },
      );
      expect((await ask({ only: ['openai'] })).body.provider).toBe('openai');
      expect((await ask({ only: ['groq'] })).body.provider).toBe('groq');
      up.mock.enqueue({ reply: { text: 'ok' } }, { reply: { text: 'ok' } });
      expect((await ask({ sort: 'throughput' })).body.provider).toBe('openai');
      expect((await ask({ sort: 'latency' })).body.provider).toBe('groq');
    } finally {
      await gw.stop();
      await up.mock.close();
    }
  });
});
