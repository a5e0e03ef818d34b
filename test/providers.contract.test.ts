/**
 * The provider contract: every adapter, against its mock upstream (a real HTTP server speaking the
 * provider's wire format; the dev provider needs none), must behave the same through the canonical
 * shapes. A new provider = its folder + one line in `ADAPTERS`.
 *
 * Scenarios are scripted once, semantically: network adapters get them through the mock's queue,
 * the dev provider through a `gatehouse:{…}` directive in the user message.
 */
import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChatChunk, ChatMessage, ChatRequest, ToolDefinition } from '../src/formats/chat.js';
import { createProvider } from '../src/providers/registry.js';
import {
  type CallContext,
  type Provider,
  type ProviderConfig,
  type ProviderKind,
  UpstreamError,
} from '../src/providers/types.js';
import { bedrockView, startMockBedrock } from './support/mock-bedrock.js';
import {
  type MockReply,
  type MockUpstream,
  type RecordedRequest,
  startMockUpstream,
  type WireView,
  wireView,
} from './support/mock-upstream.js';
import { startMockVertex, vertexSettings } from './support/mock-vertex.js';

const KEY = 'sk-test-SECRET-0123456789abcdef';
const AWS_KEYS = { accessKeyId: 'AKIAGATEHOUSETEST001', secretAccessKey: KEY };

interface AdapterCase {
  kind: ProviderKind;
  /** Base URL for the provider given the mock's origin; null: the adapter makes no network calls. */
  base: ((origin: string) => string) | null;
  /** Header the key must travel in (network adapters). */
  auth?: NonNullable<WireView['auth']>['header'];
  embeddings: boolean;
  /** The wire delivers a tool call's arguments in one piece (Gemini). */
  wholeToolArgs?: boolean;
  /** A mock of the provider's own (mock-upstream.ts by default). */
  mock?: () => Promise<MockUpstream>;
  /** Settings of the provider's own, given its mock. */
  settings?: (mock: MockUpstream) => Partial<ProviderConfig>;
  /** How to read the requests of a mock that is not the shared one's wire (mock-upstream.ts's view). */
  view?: (req: RecordedRequest) => WireView;
  /** The key signs each request and never travels (SigV4): the view's key is the one that signed. */
  signed?: boolean;
}

const ADAPTERS: AdapterCase[] = [
  { kind: 'openai', base: (o) => `${o}/v1`, auth: 'authorization', embeddings: true },
  { kind: 'openai-compatible', base: (o) => `${o}/v1`, auth: 'authorization', embeddings: true },
  { kind: 'anthropic', base: (o) => o, auth: 'x-api-key', embeddings: false },
  {
    kind: 'google',
    base: (o) => `${o}/v1beta`,
    auth: 'x-goog-api-key',
    embeddings: true,
    wholeToolArgs: true,
  },
  // Azure OpenAI: the resource endpoint; calls go to /openai/deployments/{model}/…?api-version=….
  { kind: 'azure', base: (o) => o, auth: 'api-key', embeddings: true },
  // Vertex AI: a Bearer token from the mock's token endpoint (it issues KEY); Gemini, then Claude.
  ...(['google', 'anthropic'] as const).map(
    (publisher): AdapterCase => ({
      kind: 'vertex',
      base: (o) => o,
      auth: 'authorization',
      embeddings: true,
      wholeToolArgs: publisher === 'google',
      mock: () => startMockVertex({ token: () => KEY }),
      settings: (mock) => vertexSettings(mock, { 'vertex-test-model': publisher }),
    }),
  ),
  // AWS Bedrock: Converse on a mock that verifies each SigV4 signature; KEY is the secret access key.
  {
    kind: 'bedrock',
    base: (o) => o,
    auth: 'authorization',
    embeddings: true,
    mock: () => startMockBedrock({ credentials: [AWS_KEYS] }),
    view: bedrockView,
    signed: true,
    settings: () => ({ bedrock: { region: 'us-east-1', credentials: AWS_KEYS, modelIds: {} } }),
  },
  { kind: 'dev', base: null, embeddings: true },
];

/** What a test wants the upstream to do, independent of the wire format. */
interface Scenario {
  reply?: MockReply;
  error?: { status: number; message: string; retryAfterS?: number };
  delayMs?: number;
  eventDelayMs?: number;
  /** Stream dies after this many upstream events / dev chunks. */
  dieAfter?: number;
}

const WEATHER_TOOL: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};

async function collect(it: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

async function collectUntilError(
  it: AsyncIterable<ChatChunk>,
): Promise<{ chunks: ChatChunk[]; error: unknown }> {
  const chunks: ChatChunk[] = [];
  try {
    for await (const c of it) chunks.push(c);
  } catch (error) {
    return { chunks, error };
  }
  return { chunks, error: undefined };
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const joinContent = (chunks: ChatChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

describe.each(ADAPTERS)('provider contract: $kind', (c) => {
  let mock: MockUpstream;
  let provider: Provider;
  const network = c.base !== null;
  const ctx = (signal: AbortSignal = new AbortController().signal): CallContext => ({ apiKey: KEY, signal });
  const model = c.kind === 'dev' ? 'scripted' : `${c.kind}-test-model`;

  beforeAll(async () => {
    mock = await (c.mock ?? startMockUpstream)();
    provider = createProvider({
      slug: c.kind,
      kind: c.kind,
      baseUrl: c.base ? c.base(mock.url) : 'dev://local',
      apiKey: KEY,
      ...c.settings?.(mock),
    });
  });
  afterEach(() => mock.reset());
  afterAll(() => mock.close());

  /** Scripts the upstream and returns the user message text carrying the scenario. */
  function script(text: string, s: Scenario): string {
    if (network) {
      mock.enqueue({
        ...(s.reply ? { reply: s.reply } : {}),
        ...(s.error
          ? {
              status: s.error.status,
              error: { message: s.error.message },
              ...(s.error.retryAfterS !== undefined
                ? { headers: { 'retry-after': String(s.error.retryAfterS) } }
                : {}),
            }
          : {}),
        ...(s.delayMs !== undefined ? { delayMs: s.delayMs } : {}),
        ...(s.eventDelayMs !== undefined ? { eventDelayMs: s.eventDelayMs } : {}),
        ...(s.dieAfter !== undefined ? { dieAfterEvents: s.dieAfter } : {}),
      });
      return text;
    }
    const d: Record<string, unknown> = {};
    if (s.reply?.text !== undefined) d.text = s.reply.text;
    if (s.reply?.reasoning !== undefined) d.reasoning = s.reply.reasoning;
    if (s.reply?.tool_calls) d.tool_calls = s.reply.tool_calls;
    if (s.reply?.usage) d.usage = s.reply.usage;
    if (s.error)
      d.error = { status: s.error.status, message: s.error.message, retry_after_s: s.error.retryAfterS };
    if (s.delayMs !== undefined) d.delay_ms = s.delayMs;
    if (s.eventDelayMs !== undefined) d.chunk_delay_ms = s.eventDelayMs;
    if (s.dieAfter !== undefined) d.fail_after_chunks = s.dieAfter;
    return `${text} gatehouse:${JSON.stringify(d)}`;
  }

  const ask = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({
    model,
    messages,
    ...extra,
  });
  const view = c.view ?? wireView;
  const lastView = () => view(mock.requests[mock.requests.length - 1]!);

  it('answers a text prompt', async () => {
    const res = await provider.chat(
      ask([{ role: 'user', content: script('Say hi', { reply: { text: 'Hi there!' } }) }]),
      ctx(),
    );
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]!.message.role).toBe('assistant');
    expect(res.choices[0]!.message.content).toBe('Hi there!');
    expect(res.choices[0]!.finish_reason).toBe('stop');
    expect(res.choices[0]!.native_finish_reason).toBeTruthy();
    expect(res.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(res.usage!.completion_tokens).toBeGreaterThan(0);
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + res.usage!.completion_tokens);
    expect(res.id).toBeTruthy();
    if (network) expect(lastView().model).toBe(model);
  });

  it('sends the system prompt where the upstream expects it', async () => {
    const res = await provider.chat(
      ask([
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: script('Hello', { reply: { text: 'Hi' } }) },
      ]),
      ctx(),
    );
    expect(res.choices[0]!.message.content).toBe('Hi');
    if (network) {
      const v = lastView();
      expect(v.system).toBe('You are terse.');
      expect(v.turns).toHaveLength(1);
      expect(v.turns[0]).toMatchObject({ role: 'user', text: 'Hello' });
    }
  });

  it('passes tool definitions and maps a tool call back to canonical tool_calls', async () => {
    const res = await provider.chat(
      ask(
        [
          {
            role: 'user',
            content: script('Weather in Paris?', {
              reply: { tool_calls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris' } }] },
            }),
          },
        ],
        { tools: [WEATHER_TOOL], tool_choice: 'auto' },
      ),
      ctx(),
    );
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    expect(call.id).toMatch(/\S/);
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    if (network) {
      const v = lastView();
      expect(v.tools.map((t) => t.name)).toEqual(['get_weather']);
      expect(v.tools[0]!.description).toBe('Current weather for a city');
      expect((v.tools[0]!.parameters as any).properties.city).toBeTruthy();
    }
  });

  it('round-trips a tool result in the history', async () => {
    const res = await provider.chat(
      ask(
        [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":21}' },
          {
            role: 'user',
            content: script('Thanks, summarise.', { reply: { text: 'It is 21°C in Paris.' } }),
          },
        ],
        { tools: [WEATHER_TOOL] },
      ),
      ctx(),
    );
    expect(res.choices[0]!.message.content).toBe('It is 21°C in Paris.');
    if (network) {
      const v = lastView();
      const assistant = v.turns.find((t) => t.role === 'assistant')!;
      expect(assistant.toolCalls[0]).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
      const resultTurn = v.turns[v.turns.indexOf(assistant) + 1]!;
      expect(resultTurn.role).toBe('user');
      const result = resultTurn.toolResults[0]!;
      expect(JSON.stringify(result.content)).toContain('21');
      if (result.id !== undefined) expect(result.id).toBe('call_1');
      else expect(result.name).toBe('get_weather');
      expect(v.turns[0]).toMatchObject({ role: 'user', text: 'Weather in Paris?' });
    }
  });

  it('sends image input (data URL)', async () => {
    const res = await provider.chat(
      ask([
        {
          role: 'user',
          content: [
            { type: 'text', text: script('What is this?', { reply: { text: 'A pixel.' } }) },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ]),
      ctx(),
    );
    expect(res.choices[0]!.message.content).toBe('A pixel.');
    if (network) {
      const turn = lastView().turns[0]!;
      expect(turn.images).toEqual([{ mediaType: 'image/png', data: 'iVBORw0KGgo=' }]);
    }
  });

  it('streams text and ends with usage', async () => {
    const stream = await provider.chatStream(
      ask([{ role: 'user', content: script('Count', { reply: { text: 'one two three four' } }) }], {
        stream: true,
      }),
      ctx(),
    );
    const chunks = await collect(stream);
    expect(chunks.length).toBeGreaterThan(3);
    for (const ch of chunks) expect(ch.object).toBe('chat.completion.chunk');
    expect(joinContent(chunks)).toBe('one two three four');
    expect(chunks.filter((ch) => ch.choices[0]?.delta.content).length).toBeGreaterThan(1);
    expect(chunks.some((ch) => ch.choices[0]?.finish_reason === 'stop')).toBe(true);
    const last = chunks[chunks.length - 1]!;
    expect(last.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(last.usage?.completion_tokens).toBeGreaterThan(0);
    if (network) expect(lastView().stream).toBe(true);
  });

  it('streams a tool call with its arguments in pieces', async () => {
    const args = { city: 'Paris', unit: 'celsius', days: 3 };
    const stream = await provider.chatStream(
      ask(
        [
          {
            role: 'user',
            content: script('Weather?', {
              reply: { tool_calls: [{ id: 'call_xyz', name: 'get_weather', arguments: args }] },
            }),
          },
        ],
        { tools: [WEATHER_TOOL], stream: true },
      ),
      ctx(),
    );
    const chunks = await collect(stream);
    const deltas = chunks.flatMap((ch) => ch.choices[0]?.delta.tool_calls ?? []);
    expect(deltas.every((d) => d.index === 0)).toBe(true);
    expect(deltas[0]!.id).toMatch(/\S/);
    expect(deltas[0]!.function?.name).toBe('get_weather');
    const pieces = deltas.map((d) => d.function?.arguments ?? '').filter(Boolean);
    expect(pieces.length).toBeGreaterThanOrEqual(c.wholeToolArgs ? 1 : 2);
    expect(JSON.parse(pieces.join(''))).toEqual(args);
    expect(chunks.some((ch) => ch.choices[0]?.finish_reason === 'tool_calls')).toBe(true);
    expect(chunks[chunks.length - 1]!.usage).toBeTruthy();
  });

  it('429 with Retry-After → retryable UpstreamError with retryAfterMs', async () => {
    const err = await caught(
      provider.chat(
        ask([
          {
            role: 'user',
            content: script('Hi', { error: { status: 429, message: 'Rate limit reached', retryAfterS: 2 } }),
          },
        ]),
        ctx(),
      ),
    );
    expect(err).toBeInstanceOf(UpstreamError);
    const e = err as UpstreamError;
    expect(e.status).toBe(429);
    expect(e.retryable).toBe(true);
    expect(e.retryAfterMs).toBe(2000);
    expect(e.message).toContain('Rate limit reached');
  });

  it('500 → retryable (a stream rejects before it starts)', async () => {
    const err = await caught(
      provider.chatStream(
        ask(
          [
            {
              role: 'user',
              content: script('Hi', { error: { status: 500, message: 'The server had an error' } }),
            },
          ],
          {
            stream: true,
          },
        ),
        ctx(),
      ),
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).status).toBe(500);
    expect((err as UpstreamError).retryable).toBe(true);
    expect((err as UpstreamError).message).toContain('The server had an error');
  });

  it('400 → not retryable, upstream message preserved', async () => {
    const err = await caught(
      provider.chat(
        ask([
          {
            role: 'user',
            content: script('Hi', { error: { status: 400, message: "Invalid value for 'temperature'" } }),
          },
        ]),
        ctx(),
      ),
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).status).toBe(400);
    expect((err as UpstreamError).retryable).toBe(false);
    expect((err as UpstreamError).message).toContain("Invalid value for 'temperature'");
  });

  it('a caller abort rejects with the abort (not an UpstreamError)', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const p = provider.chat(
      ask([{ role: 'user', content: script('Hi', { delayMs: 10_000 }) }]),
      ctx(ac.signal),
    );
    setTimeout(() => ac.abort(), 50);
    const err = await caught(p);
    expect(err).not.toBeInstanceOf(UpstreamError);
    expect((err as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a caller abort mid-stream ends the iterator with the abort', async () => {
    const ac = new AbortController();
    const stream = await provider.chatStream(
      ask(
        [{ role: 'user', content: script('Hi', { reply: { text: 'a b c d e f g h' }, eventDelayMs: 300 }) }],
        {
          stream: true,
        },
      ),
      ctx(ac.signal),
    );
    const chunks: ChatChunk[] = [];
    const err = await caught(
      (async () => {
        for await (const ch of stream) {
          chunks.push(ch);
          if (chunks.length === 1) ac.abort();
        }
      })(),
    );
    expect(err).not.toBeInstanceOf(UpstreamError);
    expect((err as Error).name).toBe('AbortError');
  });

  it.skipIf(!network)('connection refused → UpstreamError status 0, retryable', async () => {
    const port = await closedPort();
    const p = createProvider({
      slug: c.kind,
      kind: c.kind,
      baseUrl: c.base!(`http://127.0.0.1:${port}`),
      apiKey: KEY,
      ...c.settings?.(mock),
    });
    const err = await caught(p.chat(ask([{ role: 'user', content: 'Hi' }]), ctx()));
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).status).toBe(0);
    expect((err as UpstreamError).retryable).toBe(true);
    expect((err as UpstreamError).message).not.toContain(KEY);
  });

  it('a stream dying mid-way makes the iterator throw UpstreamError', async () => {
    const stream = await provider.chatStream(
      ask(
        [
          {
            role: 'user',
            content: script('Hi', { reply: { text: 'one two three four five six' }, dieAfter: 3 }),
          },
        ],
        {
          stream: true,
        },
      ),
      ctx(),
    );
    const { chunks, error } = await collectUntilError(stream);
    expect(chunks.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).retryable).toBe(true);
    expect(joinContent(chunks)).not.toBe('one two three four five six');
  });

  it('sends the key in the right header and never leaks it in errors', async () => {
    await provider.chat(ask([{ role: 'user', content: script('Hi', { reply: { text: 'ok' } }) }]), ctx());
    if (network) {
      const req = mock.requests[mock.requests.length - 1]!;
      expect(view(req).auth).toEqual({ header: c.auth, key: KEY });
      const carrying = Object.entries(req.headers).filter(([, v]) => String(v).includes(KEY));
      expect(carrying.map(([k]) => k)).toEqual(c.signed ? [] : [c.auth]);
      expect(JSON.stringify(req.query)).not.toContain(KEY);
      if (c.kind === 'anthropic') expect(req.headers['anthropic-version']).toBe('2023-06-01');
      if (c.kind === 'azure') {
        expect(req.path).toBe(`/openai/deployments/${model}/chat/completions`);
        expect(req.query).toEqual({ 'api-version': '2024-10-21' });
      }
    }
    const leak = `Incorrect API key provided: ${KEY}.`;
    for (const status of [401, 429, 500]) {
      const err = await caught(
        provider.chat(
          ask([{ role: 'user', content: script('Hi', { error: { status, message: leak } }) }]),
          ctx(),
        ),
      );
      expect(err).toBeInstanceOf(UpstreamError);
      expect((err as UpstreamError).message).not.toContain(KEY);
      expect((err as UpstreamError).message).toContain('Incorrect API key provided');
      expect(JSON.stringify((err as UpstreamError).body ?? '')).not.toContain(KEY);
    }
  });

  it.skipIf(!c.embeddings)('creates embeddings', async () => {
    const res = await provider.embeddings!(
      { model: `${model}-embed`, input: ['hello world', 'second input'] },
      ctx(),
    );
    expect(res.object).toBe('list');
    expect(res.data).toHaveLength(2);
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    for (const d of res.data) {
      expect(d.object).toBe('embedding');
      expect(Array.isArray(d.embedding)).toBe(true);
      expect((d.embedding as number[]).length).toBeGreaterThan(0);
      expect((d.embedding as number[]).every((x) => typeof x === 'number')).toBe(true);
    }
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
    if (network) {
      const req = mock.requests[mock.requests.length - 1]!;
      expect(req.format).toMatch(/embed/);
      if (c.kind === 'azure') expect(req.path).toBe(`/openai/deployments/${model}-embed/embeddings`);
      expect(JSON.stringify(req.body)).toContain('second input');
    }
  });

  it.skipIf(c.embeddings)('serves no embeddings', () => {
    expect(provider.embeddings).toBeUndefined();
  });
});
