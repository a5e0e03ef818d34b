/**
 * Translation between caller formats and provider wires keeps what it can and says what it lost:
 * cost and latency hints map to the target's equivalent (cache breakpoints, OpenAI's hints), the
 * rest is dropped and listed in `x-gatehouse-dropped-fields` and `gateway_metadata.dropped_fields`,
 * and the two coding agents' requests succeed on a provider of the other format. Cached tokens are
 * read from every wire and priced. Real gateway, real sockets, mock upstreams.
 */
import { existsSync, readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLAUDE_CODE_BETAS, claudeCodeTurn, codexTurn } from './fixtures/agent-turns.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const HEADER = 'x-gatehouse-dropped-fields';
const CC = { type: 'ephemeral' } as const;

/** SSE `data:` payloads of a stream body (without [DONE]). */
const sseData = (text: string): any[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));

const PRICED = [
  {
    id: 'hint/claude',
    endpoints: [
      {
        provider: 'anthropic',
        upstream_model: 'claude-x',
        pricing: { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75 },
      },
    ],
  },
  {
    id: 'hint/gpt',
    endpoints: [
      {
        provider: 'openai',
        upstream_model: 'gpt-x',
        pricing: { prompt: 2, completion: 8, cached_prompt: 0.5 },
      },
    ],
  },
  {
    id: 'hint/gemini',
    endpoints: [
      {
        provider: 'google-ai-studio',
        upstream_model: 'gemini-x',
        pricing: { prompt: 1, completion: 4, cached_prompt: 0.25 },
      },
    ],
  },
];

/** A gateway over the mock upstreams with the cache-priced models above, and credits. */
async function start() {
  const up = await startUpstreams(PRICED);
  const gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
  await adminClient(gw.url)('POST', '/admin/credits', {
    organization_id: gw.organizationId,
    amount_usd: 100,
  });
  return { gw, mock: up.mock, call: client(gw.url, gw.apiKey) };
}

let gw: TestGateway;
let mock: MockUpstream;
let call: ReturnType<typeof client>;
let anthropic: Anthropic;
beforeAll(async () => {
  ({ gw, mock, call } = await start());
  anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});
beforeEach(() => mock.reset());

describe('translation keeps hints where it can and lists what it drops', () => {
  it('/chat/completions → Anthropic: OpenRouter-style breakpoints become cache_control blocks', async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'hint/claude',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'A long system prompt.', cache_control: CC }] },
        {
          role: 'user',
          content: [{ type: 'text', text: 'Question?', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        },
      ],
      tools: [
        { type: 'function', function: { name: 'f', parameters: { type: 'object' } }, cache_control: CC },
      ],
      service_tier: 'auto',
      prompt_cache_key: 'tenant-7',
      top_k: 10,
    });
    expect(res.status).toBe(200);
    const sent = mock.requests[0]?.body;
    expect(mock.requests[0]?.path).toMatch(/\/messages$/);
    expect(sent.system).toEqual([{ type: 'text', text: 'A long system prompt.', cache_control: CC }]);
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'text', text: 'Question?', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      },
    ]);
    expect(sent.tools[0].cache_control).toEqual(CC);
    expect(sent).toMatchObject({ service_tier: 'auto', top_k: 10 });
    expect(sent).not.toHaveProperty('prompt_cache_key');
    // prompt_cache_key has no Anthropic equivalent: dropped, and said so.
    expect(res.headers.get(HEADER)).toBe('prompt_cache_key');
    expect(res.body.gateway_metadata.dropped_fields).toEqual(['prompt_cache_key']);
  });

  it('/chat/completions → OpenAI: the hints reach OpenAI; breakpoints are dropped and listed', async () => {
    const hints = {
      prompt_cache_key: 'tenant-7',
      prompt_cache_retention: '24h',
      service_tier: 'flex',
      verbosity: 'low',
      store: true,
      metadata: { run: '42' },
      safety_identifier: 'user-hash',
    };
    const res = await call('POST', '/chat/completions', {
      model: 'hint/gpt',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: CC }] }],
      ...hints,
    });
    expect(res.status).toBe(200);
    const sent = mock.requests[0]?.body;
    expect(sent).toMatchObject(hints);
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
    expect(res.headers.get(HEADER)).toBe('cache_control');
    expect(res.body.gateway_metadata.dropped_fields).toEqual(['cache_control']);
    // Nothing lost: no header, an empty list.
    const plain = await call('POST', '/chat/completions', {
      model: 'hint/gpt',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(plain.headers.get(HEADER)).toBeNull();
    expect(plain.body.gateway_metadata.dropped_fields).toEqual([]);
  });

  it('/chat/completions → Gemini: implicit caching, so breakpoints and OpenAI hints are listed (streams too)', async () => {
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'hint/gemini',
        stream: true,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: CC }] }],
        prompt_cache_key: 'k',
        top_k: 3,
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe('cache_control,prompt_cache_key');
    expect(sseData(await res.text()).at(-1)?.usage).toBeTruthy();
    expect(mock.requests[0]?.body.generationConfig.topK).toBe(3);
    expect(JSON.stringify(mock.requests[0]?.body)).not.toContain('cache_control');
  });

  it('latency and housekeeping fields with no equivalent are listed, not refused: prediction, truncation, max_tool_calls', async () => {
    mock.enqueue({ reply: { text: 'ok' } }, { reply: { text: 'ok' } });
    const chat = await call('POST', '/chat/completions', {
      model: 'hint/claude',
      messages: [{ role: 'user', content: 'Hi' }],
      prediction: { type: 'content', content: 'Hello' },
    });
    expect(chat.status, chat.text).toBe(200);
    expect(chat.headers.get(HEADER)).toBe('prediction');
    expect(chat.body.gateway_metadata.dropped_fields).toEqual(['prediction']);
    const responses = await call('POST', '/responses', {
      model: 'hint/claude',
      input: 'Hi',
      truncation: 'auto',
      max_tool_calls: 2,
    });
    expect(responses.status, responses.text).toBe(200);
    expect(responses.headers.get(HEADER)).toBe('truncation,max_tool_calls');
    expect(mock.requests.map((r) => Object.keys(r.body))).toEqual([
      expect.not.arrayContaining(['prediction']),
      expect.not.arrayContaining(['truncation', 'max_tool_calls']),
    ]);
  });

  it('Claude Code (/messages) on an OpenAI-served model succeeds; what has no equivalent is listed', async () => {
    mock.enqueue({ reply: { text: 'hi!' }, times: 2 });
    // With the official client, streamed as Claude Code streams it.
    const { data: stream, response } = await anthropic.beta.messages
      .create({ ...(claudeCodeTurn('hint/gpt') as any), stream: true, betas: CLAUDE_CODE_BETAS.split(',') })
      .withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get(HEADER)).toBe('context_management,anthropic-beta,cache_control');
    let text = '';
    for await (const ev of stream as unknown as AsyncIterable<any>)
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    expect(text).toBe('hi!');

    const sent = mock.requests[0];
    expect(sent?.path).toMatch(/\/chat\/completions$/);
    expect(sent?.headers.authorization).toBe('Bearer sk-operator-openai-0000');
    expect(sent?.body).toMatchObject({
      model: 'gpt-x',
      max_completion_tokens: 32000,
      reasoning_effort: 'high',
      user: 'user_5f1c_account__session_0b7e',
    });
    expect(sent?.body.messages[0]).toEqual({
      role: 'system',
      content: [
        { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
        {
          type: 'text',
          text: 'You are an interactive CLI tool that helps users with software engineering tasks.',
        },
      ],
    });
    expect(sent?.body.tools[0].function.name).toBe('Bash');
    for (const absent of ['cache_control', 'context_management', 'thinking', 'anthropic-beta'])
      expect(JSON.stringify(sent?.body)).not.toContain(absent);

    // Not streamed, raw: the same list, the answer in Anthropic's shape.
    const res = await fetch(`${gw.url}/api/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': gw.apiKey,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': CLAUDE_CODE_BETAS,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ ...claudeCodeTurn('hint/gpt'), stream: false }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe('context_management,anthropic-beta,cache_control');
    expect(((await res.json()) as any).content).toEqual([
      expect.objectContaining({ type: 'text', text: 'hi!' }),
    ]);
  });

  it('Codex CLI (/responses) on an Anthropic-served model: tools translate, calls come back as Codex declared them', async () => {
    mock.enqueue({
      reply: {
        tool_calls: [
          { id: 'toolu_1', name: 'apply_patch', arguments: { input: '*** Begin Patch\n*** End Patch\n' } },
          { id: 'toolu_2', name: 'mcp__docs__search', arguments: { q: 'typo' } },
        ],
      },
    });
    const res = await fetch(`${gw.url}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(codexTurn('hint/claude')),
    });
    expect(res.status).toBe(200);
    // Codex's cached-only web search becomes Claude's (live) search.
    expect(res.headers.get(HEADER)).toBe(
      'tools[1].format,tools[3].external_web_access,prompt_cache_key,verbosity',
    );
    const events = sseData(await res.text());
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    expect(done).toEqual([
      expect.objectContaining({ type: 'web_search_call', status: 'completed' }),
      expect.objectContaining({
        type: 'custom_tool_call',
        call_id: 'toolu_1',
        name: 'apply_patch',
        input: '*** Begin Patch\n*** End Patch\n',
      }),
      expect.objectContaining({
        type: 'function_call',
        call_id: 'toolu_2',
        name: 'search',
        namespace: 'mcp__docs',
        arguments: '{"q":"typo"}',
      }),
    ]);
    expect(events.at(-1)?.type).toBe('response.completed');

    const sent = mock.requests[0];
    expect(sent?.path).toMatch(/\/messages$/);
    expect(sent?.body.tools.map((t: any) => t.name)).toEqual([
      'shell_command',
      'apply_patch',
      'mcp__docs__search',
      'web_search',
    ]);
    expect(sent?.body.tools[3]).toEqual({ type: 'web_search_20250305', name: 'web_search' });
    expect(sent?.body.tools[1].input_schema).toMatchObject({
      properties: { input: { type: 'string' } },
      required: ['input'],
    });
    expect(sent?.body.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });

    // Codex's next turn sends the calls back with their outputs: Anthropic gets its tool loop.
    mock.enqueue({ reply: { text: 'Fixed.' } });
    const next = await call('POST', '/responses', {
      ...codexTurn('hint/claude'),
      stream: false,
      input: [
        ...codexTurn('hint/claude').input,
        // The web_search_call item too: another provider's search is dropped from the history.
        ...done,
        { type: 'custom_tool_call_output', call_id: 'toolu_1', output: 'Success. Updated README.md' },
        { type: 'function_call_output', call_id: 'toolu_2', output: 'no results' },
      ],
    });
    expect(next.status).toBe(200);
    expect(next.body.output_text).toBe('Fixed.');
    const turns = mock.requests[1]?.body.messages;
    expect(turns.at(-2)).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: 'toolu_1',
          name: 'apply_patch',
          input: { input: '*** Begin Patch\n*** End Patch\n' },
        },
        { type: 'tool_use', id: 'toolu_2', name: 'mcp__docs__search', input: { q: 'typo' } },
      ],
    });
    expect(turns.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Success. Updated README.md' },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: 'no results' },
      ],
    });
  });

  it('bad hints are a 400 naming the field, in the caller format', async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'hint/claude',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'forever' } }] },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(
      /^messages\[0\]\.content\[0\]\.cache_control\.type: must be one of 'ephemeral'/,
    );
    // (On /chat/completions an OpenAI provider is a pass-through lane: top_k is the provider's to
    // judge. Translated from /messages it is refused before any call.)
    const topK = await call('POST', '/messages', {
      model: 'hint/gpt',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'x' }],
      top_k: 5,
    });
    expect(topK.status).toBe(400);
    expect(topK.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(topK.body.error.message).toMatch(/^top_k cannot be sent to OpenAI-format providers/);
    expect(mock.requests).toHaveLength(0);
  });
});

describe('cached tokens are read from every wire and priced', () => {
  // [model, upstream usage, cached, written, expected cost in USD]
  const cases: [string, Record<string, number>, number, number, number][] = [
    // Anthropic: 500 plain × $3 + 2000 read × $0.30 + 500 written × $3.75, 100 out × $15 (per million)
    [
      'hint/claude',
      { prompt_tokens: 3000, cached_tokens: 2000, cache_write_tokens: 500, completion_tokens: 100 },
      2000,
      500,
      0.005475,
    ],
    // OpenAI: 476 plain × $2 + 1024 cached × $0.50, 10 out × $8
    ['hint/gpt', { prompt_tokens: 1500, cached_tokens: 1024, completion_tokens: 10 }, 1024, 0, 0.001544],
    // Gemini: 952 plain × $1 + 2048 cached × $0.25, 10 out × $4
    ['hint/gemini', { prompt_tokens: 3000, cached_tokens: 2048, completion_tokens: 10 }, 2048, 0, 0.001504],
  ];

  it.each(
    cases,
  )('%s: the answer, the generation and its cost count cache reads and writes', async (model, usage, cached, written, cost) => {
    for (const stream of [false, true]) {
      mock.enqueue({ reply: { text: 'ok', usage } });
      const body = { model, messages: [{ role: 'user', content: 'Hi' }], stream };
      let id: string;
      let answered: any;
      if (!stream) {
        const res = await call('POST', '/chat/completions', body);
        expect(res.status).toBe(200);
        id = res.body.id;
        answered = res.body.usage;
      } else {
        const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const chunks = sseData(await res.text());
        id = chunks[0].id;
        answered = chunks.at(-1).usage;
      }
      expect(answered.prompt_tokens).toBe(usage.prompt_tokens);
      expect(answered.prompt_tokens_details).toMatchObject({
        cached_tokens: cached,
        cache_write_tokens: written,
      });
      expect(answered.cost).toBeCloseTo(cost, 12);
      const gen = await call('GET', `/generation?id=${id}`);
      expect(gen.status).toBe(200);
      expect(gen.body.data).toMatchObject({
        tokens_prompt: usage.prompt_tokens,
        native_tokens_cached: cached,
        native_tokens_cache_write: written,
        streamed: stream,
      });
      expect(gen.body.data.total_cost).toBeCloseTo(cost, 12);
    }
  });
});

// The agents' own requests, recorded from the real clients (test/fixtures/agents/record.ts), replayed
// against a model of the other format: every one must translate and be served.
const recorded = (agent: string) => new URL(`./fixtures/agents/${agent}.requests.json`, import.meta.url);
const haveRecordings = existsSync(recorded('claude-code')) && existsSync(recorded('codex'));
const recordedRequests = (agent: string): { name: string; index: number; headers: any; body: any }[] =>
  JSON.parse(readFileSync(recorded(agent), 'utf8')).exchanges.flatMap((ex: any) =>
    ex.requests.map((r: any, index: number) => ({ name: ex.name, index, headers: r.headers, body: r.body })),
  );

describe.skipIf(!haveRecordings)("the agents' recorded requests on the other format's provider", () => {
  const claude = haveRecordings ? recordedRequests('claude-code') : [];
  const codex = haveRecordings ? recordedRequests('codex') : [];

  it.each(
    claude.map((r) => [`${r.name} #${r.index}`, r] as const),
  )('Claude Code %s → OpenAI-served model', async (_, r) => {
    const res = await fetch(`${gw.url}/api/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': gw.apiKey,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': r.headers['anthropic-beta'],
        'content-type': 'application/json',
      },
      body: JSON.stringify({ ...r.body, model: 'hint/gpt' }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(sseData(text).at(-1)?.type).toBe('message_stop');
    expect(res.headers.get(HEADER)?.split(',')).toEqual(
      expect.arrayContaining(['context_management', 'anthropic-beta', 'cache_control']),
    );
    const sent = mock.requests[0];
    expect(sent?.path).toMatch(/\/chat\/completions$/);
    expect(sent?.body.model).toBe('gpt-x');
    expect(sent?.body.tools.length).toBeGreaterThan(0);
    expect(JSON.stringify(sent?.body)).not.toMatch(/cache_control|context_management|defer_loading/);
  });

  it.each(
    codex.map((r) => [`${r.name} #${r.index}`, r] as const),
  )('Codex %s → Anthropic-served model', async (_, r) => {
    const res = await fetch(`${gw.url}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...r.body, model: 'hint/claude' }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(sseData(text).at(-1)?.type).toBe('response.completed');
    expect(res.headers.get(HEADER)?.split(',')).toEqual(expect.arrayContaining(['prompt_cache_key']));
    const sent = mock.requests[0];
    expect(sent?.path).toMatch(/\/messages$/);
    expect(sent?.body.model).toBe('claude-x');
    expect(sent?.body.tools.length).toBeGreaterThan(0);
    for (const t of sent?.body.tools ?? []) expect(t.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    // A turn that sends back a tool call and its output: Anthropic gets tool_use, then tool_result.
    const outputs = r.body.input.filter((i: any) => i.type === 'function_call_output');
    if (outputs.length) {
      const last = sent?.body.messages.at(-1);
      expect(last.content.map((b: any) => b.type)).toContain('tool_result');
      expect(sent?.body.messages.at(-2).content.map((b: any) => b.type)).toContain('tool_use');
    }
  });
});
