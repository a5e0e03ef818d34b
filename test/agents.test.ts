/**
 * Acceptance: the coding agents people put behind a gateway — Claude Code (`claude -p`) and Codex
 * CLI (`codex exec`), the real npm packages — driven headless through Gatehouse to mock Anthropic
 * and OpenAI upstreams that speak the real wire formats. What each agent sends is described in
 * test/fixtures/agents/README.md; the harness is test/support/agents.ts.
 *
 * Each agent talks to a recording proxy in front of the gateway, so a test can compare what the
 * agent sent with what reached the upstream.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AgentResult, agentVersions, runClaudeCode, runCodex } from './support/agents.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { geminiRequestProblems } from './support/gemini-request.js';
import { adminClient, client } from './support/http.js';
import { BEDROCK_TEST_KEYS, type MockBedrock, startMockBedrock } from './support/mock-bedrock.js';
import {
  type MockReply,
  type MockStep,
  type MockUpstream,
  type RecordedRequest,
  startMockUpstream,
  wireView,
} from './support/mock-upstream.js';
import { type MockVertex, startMockVertex } from './support/mock-vertex.js';
import { type RecordingProxy, startRecordingProxy } from './support/recording-proxy.js';

const versions = agentVersions();
const hasClaude = typeof versions.claude === 'string';
const hasCodex = typeof versions.codex === 'string';
for (const [name, v] of Object.entries(versions)) {
  if (v instanceof Error) {
    console.warn(`\n!!! Coding-agent tests for ${name} SKIPPED: ${v.message} (npm ci installs it) !!!\n`);
  }
}

const AGENT_TIMEOUT = 120_000;
const claudeIt = (name: string, fn: () => Promise<void>) => it.skipIf(!hasClaude)(name, fn, AGENT_TIMEOUT);
const codexIt = (name: string, fn: () => Promise<void>) => it.skipIf(!hasCodex)(name, fn, AGENT_TIMEOUT);

const FILES = { 'hello.txt': 'hello from the file\n' };
const ANSWER = 'The file says hello.';
/** Usage the mock reports on the two turns of a tool round trip. */
const TURNS = [
  { prompt_tokens: 1200, completion_tokens: 30, cached_tokens: 1000 },
  { prompt_tokens: 1300, completion_tokens: 10, cached_tokens: 1200 },
];

/** The agents' own default model ids, and one each for the other format (USD per million tokens). */
const PRICES = {
  'claude-opus-5-5': { prompt: 5, completion: 25, cached_prompt: 0.5, cache_write: 6.25 },
  'gpt-6.2-sol': { prompt: 2, completion: 10, cached_prompt: 0.2 },
  'gpt-5.5': { prompt: 1.25, completion: 10, cached_prompt: 0.125 },
  'gemini-3.5-pro': { prompt: 2, completion: 12, cached_prompt: 0.2 },
};
/** A Claude model an operator serves from Amazon Bedrock (its cross-region inference profile). */
const BEDROCK_CLAUDE = {
  id: 'claude-sonnet-5-bedrock',
  bedrockId: 'us.anthropic.claude-sonnet-5-v1:0',
  pricing: { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75 },
};
/** A Claude model an operator serves from Google Vertex AI (its Vertex model id). */
const VERTEX_CLAUDE = {
  id: 'claude-sonnet-5-vertex',
  vertexId: 'claude-sonnet-5@20261101',
  pricing: { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75 },
};
type Priced = keyof typeof PRICES;
type Vendor = 'anthropic' | 'openai' | 'google';
const vendorOf = (id: Priced): Vendor =>
  id.startsWith('claude') ? 'anthropic' : id.startsWith('gemini') ? 'google' : 'openai';
/** The catalog's provider slug of each vendor (Gemini's is Google AI Studio). */
const PROVIDER: Record<Vendor, string> = {
  anthropic: 'anthropic',
  openai: 'openai',
  google: 'google-ai-studio',
};

interface Price {
  prompt: number;
  completion: number;
  cached_prompt: number;
}
const expectedCost = (p: Price) =>
  TURNS.reduce((sum, u) => {
    const plain = u.prompt_tokens - u.cached_tokens;
    return (
      sum + (plain * p.prompt + u.cached_tokens * p.cached_prompt + u.completion_tokens * p.completion) / 1e6
    );
  }, 0);

const OPERATOR_KEYS: Record<Vendor, string> = {
  anthropic: 'sk-ant-operator-agents-0000',
  openai: 'sk-operator-openai-agents-0000',
  google: 'g-operator-agents-0000000000',
};

/**
 * The mock's side of a tool round trip, for requests on `path`: first a call of the agent's own
 * tool that reads hello.txt, then a text answer.
 */
function toolRoundTrip(
  path: RegExp,
  call: { name: string; arguments: unknown },
  extra: Partial<MockReply> = {},
): MockStep[] {
  return [
    { match: { path }, reply: { text: 'Reading it.', tool_calls: [call], usage: TURNS[0], ...extra } },
    { match: { path }, reply: { text: ANSWER, usage: TURNS[1] } },
  ];
}

const claudeRead = (cwd: string) => ({ name: 'Read', arguments: { file_path: `${cwd}/hello.txt` } });
const codexExec = { name: 'exec_command', arguments: { cmd: 'cat hello.txt' } };
/** Gemini 3 signs the first function call of a step (and wants the signature back). */
const GEMINI_SIGNED = { thoughtSignature: 'gemini-thought-signature-0001' };

function expectFinished(r: AgentResult, answer: string) {
  const output = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  expect(r.timedOut, `the agent timed out\n${output}`).toBe(false);
  expect(r.exitCode, `the agent failed\n${output}`).toBe(0);
  expect(r.stdout).toContain(answer);
  expect(r.outbound, 'the agent tried to reach the internet').toEqual([]);
}

describe('the coding agents against the mock upstream directly (the harness itself)', () => {
  let mock: MockUpstream;
  beforeAll(async () => {
    mock = await startMockUpstream();
  });
  afterAll(() => mock?.close());
  beforeEach(() => mock.reset());

  claudeIt('Claude Code finishes a tool round trip against the mock', async () => {
    const r = await runClaudeCode({
      baseUrl: mock.url,
      apiKey: 'sk-ant-direct',
      prompt: 'What does hello.txt say?',
      files: FILES,
      beforeStart: (cwd) => mock.enqueue(...toolRoundTrip(/\/v1\/messages$/, claudeRead(cwd))),
    });
    expectFinished(r, ANSWER);
    expect(mock.requests.map((q) => `${q.method} ${q.path}`)).toEqual([
      'POST /v1/messages',
      'POST /v1/messages',
    ]);
    const [first, second] = mock.requests.map(wireView);
    expect(first?.auth).toEqual({ header: 'x-api-key', key: 'sk-ant-direct' });
    expect(first?.stream).toBe(true);
    expect(first?.tools.map((t) => t.name)).toContain('Read');
    const result = second?.turns.at(-1)?.toolResults[0];
    expect(JSON.stringify(result?.content)).toContain('hello from the file');
  });

  codexIt('Codex finishes a tool round trip against the mock', async () => {
    mock.enqueue(...toolRoundTrip(/\/v1\/responses$/, codexExec));
    const r = await runCodex({
      baseUrl: `${mock.url}/v1`,
      apiKey: 'sk-direct',
      model: 'gpt-5.5',
      prompt: 'What does hello.txt say?',
      files: FILES,
    });
    expectFinished(r, ANSWER);
    expect(mock.requests.map((q) => `${q.method} ${q.path}`)).toEqual([
      'POST /v1/responses',
      'POST /v1/responses',
    ]);
    const [first, second] = mock.requests.map(wireView);
    expect(first?.auth).toEqual({ header: 'authorization', key: 'sk-direct' });
    expect(first?.tools.map((t) => t.name)).toContain('exec_command');
    const result = second?.turns.at(-1)?.toolResults[0];
    expect(String(result?.content)).toContain('hello from the file');
  });

  codexIt('a run past its time limit is killed with every process it started', async () => {
    // Codex's npm launcher runs the native binary as a child: both must go.
    mock.enqueue({ match: { format: 'openai-responses' }, stallAfterEvents: 1 });
    const r = await runCodex({
      baseUrl: `${mock.url}/v1`,
      apiKey: 'sk-direct',
      prompt: 'Hi',
      timeoutMs: 5000,
    });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).not.toBe(0);
    // No process of the group is left (waited for: the last ones may still be being reaped).
    await vi.waitFor(() =>
      expect(() => process.kill(-r.pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' })),
    );
  });
});

describe('the coding agents through Gatehouse', () => {
  let mock: MockUpstream;
  let bedrock: MockBedrock;
  let vertex: MockVertex;
  let gw: TestGateway;
  let proxy: RecordingProxy;
  let configDir: string | undefined;
  /** Generation ids recorded before the current test. */
  let before = new Set<string>();
  const generationIds = async () => {
    await gw.services.accountant.flush();
    const rows = await gw.services.db
      .selectFrom('generations')
      .select(['id'])
      .orderBy('created_at')
      .execute();
    return rows.map((r) => r.id);
  };

  beforeAll(async () => {
    if (!hasClaude && !hasCodex) return;
    mock = await startMockUpstream();
    bedrock = await startMockBedrock();
    vertex = await startMockVertex();
    const models: object[] = (Object.keys(PRICES) as Priced[]).map((id) => ({
      id: `${vendorOf(id)}/${id}`,
      aliases: [id],
      endpoints: [{ provider: PROVIDER[vendorOf(id)], upstream_model: id, pricing: PRICES[id] }],
    }));
    models.push({
      id: `bedrock/${BEDROCK_CLAUDE.id}`,
      aliases: [BEDROCK_CLAUDE.id],
      endpoints: [
        { provider: 'bedrock', upstream_model: BEDROCK_CLAUDE.bedrockId, pricing: BEDROCK_CLAUDE.pricing },
      ],
    });
    models.push({
      id: `vertex/${VERTEX_CLAUDE.id}`,
      aliases: [VERTEX_CLAUDE.id],
      endpoints: [
        { provider: 'vertex', upstream_model: VERTEX_CLAUDE.vertexId, pricing: VERTEX_CLAUDE.pricing },
      ],
    });
    const providers = [
      {
        slug: 'vertex',
        kind: 'vertex',
        project: vertex.project,
        region: vertex.region,
        endpoint: vertex.url,
        credentials: vertex.serviceAccount,
      },
      {
        slug: 'bedrock',
        kind: 'bedrock',
        region: 'us-east-1',
        endpoint: bedrock.url,
        access_key_id: BEDROCK_TEST_KEYS.accessKeyId,
        secret_access_key: BEDROCK_TEST_KEYS.secretAccessKey,
      },
    ];
    configDir = mkdtempSync(join(tmpdir(), 'gatehouse-agents-'));
    const config = join(configDir, 'gatehouse.json');
    writeFileSync(config, JSON.stringify({ providers, models }));
    gw = await startTestGateway('sqlite', {
      env: {
        ANTHROPIC_BASE_URL: `${mock.url}/anthropic`,
        ANTHROPIC_API_KEY: OPERATOR_KEYS.anthropic,
        OPENAI_BASE_URL: `${mock.url}/openai/v1`,
        OPENAI_API_KEY: OPERATOR_KEYS.openai,
        GEMINI_BASE_URL: `${mock.url}/google/v1beta`,
        GEMINI_API_KEY: OPERATOR_KEYS.google,
        GATEHOUSE_CONFIG: config,
        GATEHOUSE_UNPRICED_MODELS: 'allow',
      },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    proxy = await startRecordingProxy(gw.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await gw?.stop();
    await mock?.close();
    await bedrock?.close();
    await vertex?.close();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    if (!gw) return;
    mock.reset();
    bedrock.reset();
    vertex.reset();
    proxy.requests.length = 0;
    before = new Set(await generationIds());
  });

  /** What reached the upstream of one vendor. */
  const upstream = (vendor: Vendor): RecordedRequest[] =>
    mock.requests.filter((r) => r.path.startsWith(`/${vendor}/`));

  /** The agent's inference calls as it sent them (through the recording proxy). */
  const sent = () => proxy.requests.filter((r) => r.method === 'POST');

  /** Neither the gateway key nor any caller credential reached the upstream; the operator's did. */
  function expectOperatorKey(reqs: RecordedRequest[], vendor: Vendor) {
    expect(reqs.length).toBeGreaterThan(0);
    for (const r of reqs) {
      expect(wireView(r).auth?.key).toBe(OPERATOR_KEYS[vendor]);
      expect(JSON.stringify(r.headers) + JSON.stringify(r.body)).not.toContain(gw.apiKey);
    }
  }

  /** The generations of this test's calls: one per upstream turn, priced from the mock's usage. */
  async function expectPricedGenerations(pricing: Price) {
    // The agent may exit before the gateway has queued the last record: wait for both turns.
    const ids = await vi.waitFor(async () => {
      const fresh = (await generationIds()).filter((id) => !before.has(id));
      if (fresh.length < TURNS.length) throw new Error(`${fresh.length} generations recorded so far`);
      return fresh;
    });
    const key = client(gw.url, gw.apiKey);
    const gens = await Promise.all(
      ids.map(async (id) => (await key('GET', `/generation?id=${id}`)).body.data),
    );
    expect(gens.map((g) => [g.tokens_prompt, g.native_tokens_cached, g.tokens_completion])).toEqual(
      TURNS.map((u) => [u.prompt_tokens, u.cached_tokens, u.completion_tokens]),
    );
    const total = gens.reduce((s, g) => s + g.total_cost, 0);
    expect(total).toBeCloseTo(expectedCost(pricing), 10);
  }

  const claudeBase = () => `${proxy.url}/api`; // the client appends /v1/messages
  const codexBase = () => `${proxy.url}/api/v1`; // Codex appends /responses

  claudeIt(
    'Claude Code → Anthropic: the request reaches the upstream intact; usage and cached tokens priced',
    async () => {
      const r = await runClaudeCode({
        baseUrl: claudeBase(),
        apiKey: gw.apiKey,
        prompt: 'What does hello.txt say?',
        files: FILES,
        beforeStart: (cwd) => mock.enqueue(...toolRoundTrip(/^\/anthropic\//, claudeRead(cwd))),
      });
      expectFinished(r, ANSWER);
      const got = upstream('anthropic');
      const asSent = sent();
      expect(got.map((q) => q.path)).toEqual(['/anthropic/v1/messages', '/anthropic/v1/messages']);
      expect(asSent).toHaveLength(2);
      for (const [i, q] of got.entries()) {
        const original = asSent[i];
        // The body exactly as Claude Code sent it: its default model id, cache breakpoints,
        // context_management, thinking, output_config, metadata, mid-conversation system turns…
        expect(q.body).toEqual(original?.body);
        expect(q.body.model).toBe('claude-opus-5-5');
        expect(q.headers['anthropic-beta']).toBe(original?.headers['anthropic-beta']);
        expect(q.headers['anthropic-version']).toBe(original?.headers['anthropic-version']);
      }
      expect(got[0]?.body.context_management).toBeTruthy();
      expect(got[1]?.body.messages.at(-1).content.at(-1)).toMatchObject({
        type: 'tool_result',
        cache_control: { type: 'ephemeral' },
      });
      expectOperatorKey(got, 'anthropic');
      await expectPricedGenerations(PRICES['claude-opus-5-5']);
    },
  );

  claudeIt('Claude Code → an OpenAI-served model: translated, finishes its tool round trip', async () => {
    const r = await runClaudeCode({
      baseUrl: claudeBase(),
      apiKey: gw.apiKey,
      model: 'gpt-5.5',
      prompt: 'What does hello.txt say?',
      files: FILES,
      beforeStart: (cwd) => mock.enqueue(...toolRoundTrip(/^\/openai\//, claudeRead(cwd))),
    });
    expectFinished(r, ANSWER);
    const got = upstream('openai');
    expect(got).toHaveLength(2);
    const [first, second] = got.map(wireView);
    expect(first?.model).toBe('gpt-5.5');
    expect(first?.system).toContain('Claude');
    expect(first?.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['Read', 'Bash']));
    expect(JSON.stringify(second?.turns.at(-1)?.toolResults[0]?.content)).toContain('hello from the file');
    expectOperatorKey(got, 'openai');
    await expectPricedGenerations(PRICES['gpt-5.5']);
  });

  claudeIt(
    'Claude Code with an unlisted Claude model id: passed through to the Anthropic provider',
    async () => {
      const r = await runClaudeCode({
        baseUrl: claudeBase(),
        apiKey: gw.apiKey,
        model: 'claude-zeta-9',
        prompt: 'Hi',
      });
      expectFinished(r, 'Hello from claude-zeta-9!');
      expect(upstream('anthropic').map((q) => q.body.model)).toEqual(['claude-zeta-9']);
    },
  );

  claudeIt(
    'Claude Code --json-schema on an OpenAI-served model: its StructuredOutput tool, the answer in the schema',
    async () => {
      const schema = { type: 'object', properties: { says: { type: 'string' } }, required: ['says'] };
      mock.enqueue({
        match: { path: /^\/openai\// },
        reply: { tool_calls: [{ id: 'call_s1', name: 'StructuredOutput', arguments: { says: 'hello' } }] },
      });
      const r = await runClaudeCode({
        baseUrl: claudeBase(),
        apiKey: gw.apiKey,
        model: 'gpt-5.5',
        prompt: 'What does hello.txt say?',
        args: ['--json-schema', JSON.stringify(schema), '--output-format', 'json'],
      });
      expect(r.exitCode, r.stderr.slice(-1000)).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ is_error: false, structured_output: { says: 'hello' } });
      // Claude Code asks for the schema as a tool it makes the model call: a function like any other.
      const got = upstream('openai');
      expect(got).toHaveLength(1);
      const tool = wireView(got[0] as RecordedRequest).tools.find((t) => t.name === 'StructuredOutput');
      expect(tool?.parameters).toEqual(schema);
    },
  );

  claudeIt(
    "Claude Code's gateway model discovery reads Gatehouse's models in Anthropic's shape; a discovered id runs",
    async () => {
      let cached: { baseUrl: string; models: { id: string; display_name?: string }[] } | undefined;
      const r = await runClaudeCode({
        baseUrl: claudeBase(),
        apiKey: gw.apiKey,
        model: 'anthropic/claude-opus-5-5',
        prompt: 'Hi',
        env: { CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: '1' },
        // What the model picker offers: the discovery's cache, written once the list validated.
        afterExit: (home) => {
          cached = JSON.parse(readFileSync(join(home, '.claude', 'cache', 'gateway-models.json'), 'utf8'));
        },
      });
      expectFinished(r, 'Hello from claude-opus-5-5!');
      const asked = proxy.requests.find((q) => q.method === 'GET' && q.url.startsWith('/api/v1/models'));
      expect(asked?.url).toBe('/api/v1/models?limit=1000');
      expect(asked?.headers['anthropic-version']).toBeTruthy();
      // Claude Code keeps the Claude models of the list, each with the catalog's display name.
      const listed = (await (
        await fetch(`${gw.url}/api/v1/models?limit=1000`, { headers: { 'anthropic-version': '2023-06-01' } })
      ).json()) as { data: { id: string; display_name: string }[] };
      const claudes = listed.data.filter((m) => /claude|anthropic/i.test(m.id));
      expect(cached?.baseUrl).toBe(claudeBase());
      expect(cached?.models.map((m) => m.id)).toEqual(claudes.map((m) => m.id));
      const { name } = (await (
        await fetch(`${gw.url}/api/v1/models/anthropic%2Fclaude-opus-5-5`)
      ).json()) as {
        name: string;
      };
      expect(name).toBeTruthy();
      expect(cached?.models.find((m) => m.id === 'anthropic/claude-opus-5-5')?.display_name).toBe(name);
      expect(upstream('anthropic').map((q) => q.body.model)).toEqual(['claude-opus-5-5']);
    },
  );

  codexIt(
    'Codex (its default model) → OpenAI Responses: the request reaches the upstream intact',
    async () => {
      const r = await runCodex({ baseUrl: codexBase(), apiKey: gw.apiKey, prompt: 'Say hello.' });
      expectFinished(r, 'Hello from gpt-6.2-sol!');
      const got = upstream('openai');
      expect(got.map((q) => q.path)).toEqual(['/openai/v1/responses']);
      // Codex's own dialect for OpenAI models: tools as namespaces in an `additional_tools` input
      // item, encrypted reasoning asked back, nothing stored, a prompt cache key.
      expect(got[0]?.body).toEqual(sent()[0]?.body);
      expect(got[0]?.body).toMatchObject({
        model: 'gpt-6.2-sol',
        stream: true,
        store: false,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: expect.any(String),
      });
      expect(got[0]?.body.input[0]).toMatchObject({ type: 'additional_tools' });
      // The headers that tell OpenAI this dialect and this session go along.
      const asSent = sent()[0]?.headers ?? {};
      expect(got[0]?.headers['x-openai-internal-codex-responses-lite']).toBe('true');
      expect(got[0]?.headers['session-id'] ?? got[0]?.headers.session_id).toBe(
        asSent['session-id'] ?? asSent.session_id,
      );
      expect(got[0]?.headers.originator).toBe('codex_exec');
      expectOperatorKey(got, 'openai');
    },
  );

  codexIt(
    'Codex (gpt-5.5) → OpenAI Responses: tool round trip intact; usage and cached tokens priced',
    async () => {
      mock.enqueue(...toolRoundTrip(/^\/openai\//, codexExec));
      const r = await runCodex({
        baseUrl: codexBase(),
        apiKey: gw.apiKey,
        model: 'gpt-5.5',
        prompt: 'What does hello.txt say?',
        files: FILES,
      });
      expectFinished(r, ANSWER);
      const got = upstream('openai');
      expect(got.map((q) => q.path)).toEqual(['/openai/v1/responses', '/openai/v1/responses']);
      const asSent = sent();
      for (const [i, q] of got.entries()) expect(q.body).toEqual(asSent[i]?.body);
      // Built-in and freeform tools beside the function tools.
      expect(got[0]?.body.tools.map((t: any) => t.type)).toEqual(
        expect.arrayContaining(['function', 'custom', 'web_search', 'tool_search']),
      );
      expect(got[1]?.body.input.map((i: any) => i.type)).toEqual(
        expect.arrayContaining(['function_call', 'function_call_output']),
      );
      expectOperatorKey(got, 'openai');
      await expectPricedGenerations(PRICES['gpt-5.5']);
    },
  );

  codexIt(
    'Codex with supports_websockets → OpenAI Responses: its turns go over one WebSocket, none over HTTP',
    async () => {
      mock.enqueue(...toolRoundTrip(/^\/openai\//, codexExec));
      const r = await runCodex({
        baseUrl: codexBase(),
        apiKey: gw.apiKey,
        model: 'gpt-5.5',
        prompt: 'What does hello.txt say?',
        files: FILES,
        websockets: true,
      });
      expectFinished(r, ANSWER);
      const upgrades = proxy.requests.filter((q) => q.upgrade);
      expect(upgrades.map((q) => q.url)).toEqual(['/api/v1/responses']);
      expect(upgrades[0]?.headers['openai-beta']).toMatch(/^responses_websockets=/);
      // No HTTP fallback; Codex's warm-up (generate: false) reaches no provider.
      expect(sent()).toEqual([]);
      const got = upstream('openai');
      expect(got.map((q) => q.path)).toEqual(['/openai/v1/responses', '/openai/v1/responses']);
      // Upstream an HTTP stream: the socket's envelope and beta stay behind, Codex's session goes.
      expect(got[0]?.body).toMatchObject({ model: 'gpt-5.5', stream: true, store: false });
      expect(got[0]?.body.type).toBeUndefined();
      expect(got[0]?.headers['openai-beta']).toBeUndefined();
      expect(got[0]?.headers.originator).toBe('codex_exec');
      expect(got[1]?.body.input.map((i: any) => i.type)).toEqual(
        expect.arrayContaining(['function_call', 'function_call_output']),
      );
      expectOperatorKey(got, 'openai');
      await expectPricedGenerations(PRICES['gpt-5.5']);
    },
  );

  codexIt(
    'Codex with supports_websockets → an Anthropic-served model: translated over the socket',
    async () => {
      mock.enqueue(...toolRoundTrip(/^\/anthropic\//, codexExec));
      const r = await runCodex({
        baseUrl: codexBase(),
        apiKey: gw.apiKey,
        model: 'claude-opus-5-5',
        prompt: 'What does hello.txt say?',
        files: FILES,
        websockets: true,
      });
      expectFinished(r, ANSWER);
      expect(proxy.requests.filter((q) => q.upgrade).map((q) => q.url)).toEqual(['/api/v1/responses']);
      expect(sent()).toEqual([]);
      const got = upstream('anthropic');
      expect(got.map((q) => q.path)).toEqual(['/anthropic/v1/messages', '/anthropic/v1/messages']);
      expect(JSON.stringify(wireView(got[1]!).turns.at(-1)?.toolResults[0]?.content)).toContain(
        'hello from the file',
      );
      expectOperatorKey(got, 'anthropic');
      await expectPricedGenerations(PRICES['claude-opus-5-5']);
    },
  );

  codexIt('Codex → an Anthropic-served model: translated, finishes its tool round trip', async () => {
    mock.enqueue(...toolRoundTrip(/^\/anthropic\//, codexExec));
    const r = await runCodex({
      baseUrl: codexBase(),
      apiKey: gw.apiKey,
      model: 'claude-opus-5-5',
      prompt: 'What does hello.txt say?',
      files: FILES,
    });
    expectFinished(r, ANSWER);
    const got = upstream('anthropic');
    expect(got.map((q) => q.path)).toEqual(['/anthropic/v1/messages', '/anthropic/v1/messages']);
    const [first, second] = got.map(wireView);
    expect(first?.model).toBe('claude-opus-5-5');
    expect(first?.tools.map((t) => t.name)).toContain('exec_command');
    expect(JSON.stringify(second?.turns.at(-1)?.toolResults[0]?.content)).toContain('hello from the file');
    expectOperatorKey(got, 'anthropic');
    await expectPricedGenerations(PRICES['claude-opus-5-5']);
  });

  codexIt(
    'Codex exec --output-schema: its JSON schema reaches OpenAI as sent and Claude as structured output',
    async () => {
      const schema = {
        type: 'object',
        properties: { file: { type: 'string' }, says: { type: 'string' } },
        required: ['file', 'says'],
        additionalProperties: false,
      };
      const answer = JSON.stringify({ file: 'hello.txt', says: 'hello from the file' });
      for (const [model, vendor] of [
        ['gpt-5.5', 'openai'],
        ['claude-opus-5-5', 'anthropic'],
      ] as const) {
        proxy.requests.length = 0;
        mock.reset();
        mock.enqueue({ match: { path: new RegExp(`^/${vendor}/`) }, reply: { text: answer } });
        const r = await runCodex({
          baseUrl: codexBase(),
          apiKey: gw.apiKey,
          model,
          prompt: 'What does hello.txt say? Answer in the schema.',
          args: ['--output-schema', 'schema.json'],
          files: { ...FILES, 'schema.json': JSON.stringify(schema) },
        });
        expectFinished(r, answer);
        // Codex asks for the schema as the Responses API's strict json_schema text format.
        const format = sent()[0]?.body.text?.format;
        expect(format).toMatchObject({ type: 'json_schema', strict: true, schema });
        const got = upstream(vendor);
        expect(got).toHaveLength(1);
        if (vendor === 'openai') expect(got[0]?.body.text?.format).toEqual(format);
        else expect(got[0]?.body.output_config?.format).toMatchObject({ type: 'json_schema', schema });
      }
    },
  );

  /** Gemini's wire: the model in the path, streamed as SSE, every request one Gemini would take. */
  function expectGeminiRequests(got: RecordedRequest[], signature: string) {
    expect(got.map((q) => `${q.path}?${new URLSearchParams(q.query)}`)).toEqual([
      '/google/v1beta/models/gemini-3.5-pro:streamGenerateContent?alt=sse',
      '/google/v1beta/models/gemini-3.5-pro:streamGenerateContent?alt=sse',
    ]);
    for (const q of got) expect(geminiRequestProblems(q.body)).toEqual([]);
    // The function call Gemini made goes back signed (Gemini 3 refuses it unsigned).
    const second = wireView(got[1] as RecordedRequest);
    const call = second.turns.findLast((t) => t.role === 'assistant')?.toolCalls[0];
    expect(call?.signature).toBe(signature);
    expect(JSON.stringify(second.turns.at(-1)?.toolResults[0]?.content)).toContain('hello from the file');
  }

  claudeIt('Claude Code → a Gemini-served model: translated, finishes its tool round trip', async () => {
    const r = await runClaudeCode({
      baseUrl: claudeBase(),
      apiKey: gw.apiKey,
      model: 'gemini-3.5-pro',
      prompt: 'What does hello.txt say?',
      files: FILES,
      beforeStart: (cwd) => mock.enqueue(...toolRoundTrip(/^\/google\//, claudeRead(cwd), GEMINI_SIGNED)),
    });
    expectFinished(r, ANSWER);
    const got = upstream('google');
    // Sealed in a redacted_thinking block of the answer, which Claude Code sends back.
    expectGeminiRequests(got, GEMINI_SIGNED.thoughtSignature);
    const first = wireView(got[0] as RecordedRequest);
    expect(first.system).toContain('Claude');
    expect(first.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['Read', 'Bash']));
    expect(got[1]?.body.contents.at(-2).parts.find((p: any) => p.functionCall).functionCall.name).toBe(
      'Read',
    );
    expectOperatorKey(got, 'google');
    await expectPricedGenerations(PRICES['gemini-3.5-pro']);
  });

  codexIt('Codex → a Gemini-served model: translated, finishes its tool round trip', async () => {
    mock.enqueue(...toolRoundTrip(/^\/google\//, codexExec, GEMINI_SIGNED));
    const r = await runCodex({
      baseUrl: codexBase(),
      apiKey: gw.apiKey,
      model: 'gemini-3.5-pro',
      prompt: 'What does hello.txt say?',
      files: FILES,
    });
    expectFinished(r, ANSWER);
    const got = upstream('google');
    // Carried in the reasoning item's encrypted_content Codex sends back.
    expectGeminiRequests(got, GEMINI_SIGNED.thoughtSignature);
    expect(wireView(got[0] as RecordedRequest).tools.map((t) => t.name)).toContain('exec_command');
    // Gemini 3 on the Gemini API searches beside functions: the web_search Codex offers goes as
    // Google Search, its server-side tool invocations asked for (Gemini 2 and Vertex drop and list it).
    expect(got[0]?.body.tools.map(Object.keys)).toEqual([['functionDeclarations'], ['googleSearch']]);
    expect(got[0]?.body.toolConfig).toMatchObject({ includeServerSideToolInvocations: true });
    const dropped = String(sent()[0]?.answerHeaders?.['x-gatehouse-dropped-fields']).split(',');
    expect(dropped).not.toContain('web_search');
    expectOperatorKey(got, 'google');
    await expectPricedGenerations(PRICES['gemini-3.5-pro']);
  });

  claudeIt('Claude Code → a Bedrock-served Claude model: its Messages body through InvokeModel', async () => {
    const r = await runClaudeCode({
      baseUrl: claudeBase(),
      apiKey: gw.apiKey,
      model: BEDROCK_CLAUDE.id,
      prompt: 'What does hello.txt say?',
      files: FILES,
      beforeStart: (cwd) =>
        bedrock.enqueue(...toolRoundTrip(/\/invoke-with-response-stream$/, claudeRead(cwd))),
    });
    expectFinished(r, ANSWER);
    const path = `/model/${encodeURIComponent(BEDROCK_CLAUDE.bedrockId)}/invoke-with-response-stream`;
    expect(bedrock.requests.map((q) => q.path)).toEqual([path, path]);
    const asSent = sent();
    for (const [i, q] of bedrock.requests.entries()) {
      expect(q.signatureValid).toBe(true);
      expect(q.signedWith).toBe(BEDROCK_TEST_KEYS.secretAccessKey);
      expect(JSON.stringify(q.headers) + q.raw).not.toContain(gw.apiKey);
      // Bedrock's Messages body: the model in the path, no `stream`, Bedrock's version; the rest as
      // Claude Code sent it (cache breakpoints, thinking, context_management, the system turn…).
      const { model: _m, stream: _s, ...rest } = asSent[i]?.body ?? {};
      const { anthropic_version, anthropic_beta, ...body } = q.body;
      expect(anthropic_version).toBe('bedrock-2023-05-31');
      expect(body).toEqual(rest);
      // The header's betas Bedrock has (tool search under Bedrock's name); the others listed.
      const header = String(asSent[i]?.headers['anthropic-beta']).split(',');
      expect(anthropic_beta).toEqual(
        expect.arrayContaining(['claude-code-20250219', 'context-management-2025-06-27']),
      );
      if (header.includes('advanced-tool-use-2025-11-20'))
        expect(anthropic_beta).toContain('tool-search-tool-2025-10-19');
      const dropped = String(asSent[i]?.answerHeaders?.['x-gatehouse-dropped-fields'] ?? '').split(',');
      for (const beta of header)
        if (!anthropic_beta.includes(beta) && beta !== 'advanced-tool-use-2025-11-20')
          expect(dropped).toContain(`anthropic-beta:${beta}`);
    }
    expect(JSON.stringify(bedrock.requests[1]?.body.messages)).toContain('hello from the file');
    await expectPricedGenerations(BEDROCK_CLAUDE.pricing);
  });

  codexIt(
    'Codex → a Bedrock-served Claude model: translated to Converse, finishes its tool round trip',
    async () => {
      bedrock.enqueue(...toolRoundTrip(/\/converse-stream$/, codexExec));
      const r = await runCodex({
        baseUrl: codexBase(),
        apiKey: gw.apiKey,
        model: BEDROCK_CLAUDE.id,
        prompt: 'What does hello.txt say?',
        files: FILES,
      });
      expectFinished(r, ANSWER);
      const path = `/model/${encodeURIComponent(BEDROCK_CLAUDE.bedrockId)}/converse-stream`;
      expect(bedrock.requests.map((q) => q.path)).toEqual([path, path]);
      for (const q of bedrock.requests) {
        expect(q.signatureValid).toBe(true);
        expect(JSON.stringify(q.headers) + q.raw).not.toContain(gw.apiKey);
      }
      const [first, second] = bedrock.requests.map((q) => q.body);
      const tools = first.toolConfig.tools.flatMap((t: any) => (t.toolSpec ? [t.toolSpec.name] : []));
      expect(tools).toContain('exec_command');
      // Converse has no web search: the one Codex offers is left out and listed, not refused.
      expect(tools).not.toContain('web_search');
      const dropped = String(sent()[0]?.answerHeaders?.['x-gatehouse-dropped-fields']).split(',');
      expect(dropped).toContain('web_search');
      const results = second.messages.at(-1).content.filter((b: any) => b.toolResult);
      expect(JSON.stringify(results)).toContain('hello from the file');
      await expectPricedGenerations(BEDROCK_CLAUDE.pricing);
    },
  );

  /** Vertex's Claude calls: the model in the path, the token the mock issued, never the gateway key. */
  function expectVertexClaude(method: 'streamRawPredict' | 'rawPredict') {
    const path = `/v1/projects/${vertex.project}/locations/${vertex.region}/publishers/anthropic/models/${VERTEX_CLAUDE.vertexId}:${method}`;
    expect(vertex.requests.map((q) => q.path)).toEqual([path, path]);
    for (const q of vertex.requests) {
      expect(vertex.issued).toContain(/^Bearer (.+)$/.exec(String(q.headers.authorization))?.[1]);
      expect(JSON.stringify(q.headers) + JSON.stringify(q.body)).not.toContain(gw.apiKey);
      expect(q.headers['x-api-key']).toBeUndefined();
      expect(q.body.anthropic_version).toBe('vertex-2023-10-16');
      expect(q.body).not.toHaveProperty('model');
    }
    expect(JSON.stringify(vertex.requests[1]?.body.messages)).toContain('hello from the file');
  }

  claudeIt('Claude Code → a Vertex-served Claude model: its Messages body through rawPredict', async () => {
    const r = await runClaudeCode({
      baseUrl: claudeBase(),
      apiKey: gw.apiKey,
      model: VERTEX_CLAUDE.id,
      prompt: 'What does hello.txt say?',
      files: FILES,
      beforeStart: (cwd) => vertex.enqueue(...toolRoundTrip(/^\/v1\/messages$/, claudeRead(cwd))),
    });
    // Vertex answered (it refuses a beta or a field it does not take with a 400).
    expectFinished(r, ANSWER);
    expectVertexClaude('streamRawPredict');
    const asSent = sent();
    for (const [i, q] of vertex.requests.entries()) {
      const header = String(asSent[i]?.headers['anthropic-beta']).split(',');
      const kept = String(q.headers['anthropic-beta']).split(',');
      // Claude Code's own betas Vertex has (tool search under Vertex's name); the others listed.
      expect(kept).toEqual(expect.arrayContaining(['claude-code-20250219', 'effort-2025-11-24']));
      if (header.includes('advanced-tool-use-2025-11-20'))
        expect(kept).toContain('tool-search-tool-2025-10-19');
      const dropped = String(asSent[i]?.answerHeaders?.['x-gatehouse-dropped-fields'] ?? '').split(',');
      for (const beta of header)
        if (!kept.includes(beta) && beta !== 'advanced-tool-use-2025-11-20')
          expect(dropped).toContain(`anthropic-beta:${beta}`);
      // The body as Claude Code sent it, but for the model (in the path), Vertex's version and
      // context_management (Vertex has no context-management beta), which is listed.
      const { model: _m, context_management, ...rest } = asSent[i]?.body ?? {};
      const { anthropic_version: _v, ...body } = q.body;
      expect(body).toEqual(rest);
      if (context_management) expect(dropped).toContain('context_management');
    }
    await expectPricedGenerations(VERTEX_CLAUDE.pricing);
  });

  codexIt('Codex → a Vertex-served Claude model: translated, finishes its tool round trip', async () => {
    vertex.enqueue(...toolRoundTrip(/^\/v1\/messages$/, codexExec));
    const r = await runCodex({
      baseUrl: codexBase(),
      apiKey: gw.apiKey,
      model: VERTEX_CLAUDE.id,
      prompt: 'What does hello.txt say?',
      files: FILES,
    });
    expectFinished(r, ANSWER);
    expectVertexClaude('streamRawPredict');
    const [first, second] = vertex.requests.map(wireView);
    expect(first?.tools.map((t) => t.name)).toContain('exec_command');
    expect(JSON.stringify(second?.turns.at(-1)?.toolResults[0]?.content)).toContain('hello from the file');
    await expectPricedGenerations(VERTEX_CLAUDE.pricing);
  });

  codexIt('Codex with an unlisted GPT model id: passed through to the OpenAI provider', async () => {
    const r = await runCodex({ baseUrl: codexBase(), apiKey: gw.apiKey, model: 'gpt-zeta-9', prompt: 'Hi' });
    expectFinished(r, 'Hello from gpt-zeta-9!');
    expect(upstream('openai').map((q) => q.body.model)).toEqual(['gpt-zeta-9']);
  });
});
