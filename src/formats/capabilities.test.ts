import { describe, expect, it } from 'vitest';
import {
  assertTranslatable,
  CAPABILITY_RULES,
  droppedFields,
  type ProviderKind,
  SEARCH_BESIDE_FUNCTIONS,
  type TargetKind,
  untranslatableFields,
} from './capabilities.js';
import { type ChatRequest, TranslationError } from './chat.js';
import { OPENAI_HINT_FIELDS } from './hints.js';

const base: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const withImage = (url: string, role: 'user' | 'tool' = 'user'): ChatRequest => ({
  ...base,
  messages: [
    {
      role,
      ...(role === 'tool' ? { tool_call_id: 'c1' } : {}),
      content: [
        { type: 'text', text: 'see' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
});

const KINDS: ProviderKind[] = ['openai', 'anthropic', 'google'];

describe('assertTranslatable', () => {
  it('lets a plain request through to every provider kind', () => {
    const plain: ChatRequest = {
      ...base,
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 100,
      stop: ['x'],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      response_format: { type: 'text' },
      logprobs: false,
      top_logprobs: 0,
      presence_penalty: 0,
      frequency_penalty: 0,
      reasoning: { effort: 'low' },
      user: 'u',
    };
    for (const kind of KINDS) expect(() => assertTranslatable(plain, kind)).not.toThrow();
  });

  // [field named in the message, request, kinds that refuse it]
  const cases: [string, ChatRequest, ProviderKind[]][] = [
    ['logprobs', { ...base, logprobs: true }, ['anthropic', 'google']],
    ['top_logprobs', { ...base, top_logprobs: 3 }, ['anthropic', 'google']],
    ['response_format.type', { ...base, response_format: { type: 'json_object' } }, ['anthropic']],
    ['seed', { ...base, seed: 1 }, ['anthropic']],
    ['presence_penalty', { ...base, presence_penalty: 0.5 }, ['anthropic']],
    ['frequency_penalty', { ...base, frequency_penalty: -0.5 }, ['anthropic']],
    ['temperature', { ...base, temperature: 1.5 }, ['anthropic']],
    ['top_k', { ...base, top_k: 40 }, ['openai']],
  ];

  it.each(cases)('refuses %s only for the kinds that cannot carry it', (field, req, refusedBy) => {
    for (const kind of KINDS) {
      if (refusedBy.includes(kind)) {
        expect(() => assertTranslatable(req, kind)).toThrow(TranslationError);
        expect(() => assertTranslatable(req, kind)).toThrow(
          new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} cannot be sent`),
        );
      } else {
        expect(() => assertTranslatable(req, kind)).not.toThrow();
      }
    }
  });

  it('accepts images for Google, inline or by URL (fetched and inlined), and names the provider kind and the reason', () => {
    expect(() => assertTranslatable(withImage('data:image/png;base64,AAAA'), 'google')).not.toThrow();
    expect(() => assertTranslatable(withImage('https://example.com/a.png'), 'google')).not.toThrow();
    expect(() =>
      assertTranslatable({ ...base, response_format: { type: 'json_object' } }, 'anthropic'),
    ).toThrow(
      "response_format.type cannot be sent to Anthropic providers: 'json_object' is not supported (no native JSON mode, and Gatehouse does not emulate one)",
    );
  });

  it('carries images and documents in tool results to every kind (the wire moves them where it must)', () => {
    const doc: ChatRequest = {
      ...base,
      messages: [{ role: 'tool', tool_call_id: 'c1', content: [{ type: 'file', file: { file_id: 'f' } }] }],
    };
    for (const kind of KINDS) {
      expect(() => assertTranslatable(withImage('data:image/png;base64,AAAA', 'tool'), kind)).not.toThrow();
      expect(() => assertTranslatable(doc, kind)).not.toThrow();
    }
  });

  it('lists every refusal at once for routers choosing between providers', () => {
    const req: ChatRequest = { ...base, seed: 1, logprobs: true, presence_penalty: 1 };
    expect(untranslatableFields(req, 'anthropic').map((f) => f.field)).toEqual([
      'logprobs',
      'seed',
      'presence_penalty',
    ]);
    expect(untranslatableFields(req, 'openai')).toEqual([]);
  });

  it('carries a json_schema response format to every kind (Anthropic: output_config.format)', () => {
    const req: ChatRequest = {
      ...base,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
    };
    for (const kind of KINDS) expect(() => assertTranslatable(req, kind)).not.toThrow();
  });

  it('keeps one table with a rule per refusal', () => {
    expect(CAPABILITY_RULES.length).toBe(12);
    // Web search: refused by a provider (Bedrock's Converse; Gemini 2 beside functions), not a kind.
    const byProvider = ['web_search', SEARCH_BESIDE_FUNCTIONS];
    for (const rule of CAPABILITY_RULES.filter((r) => !byProvider.includes(r.field)))
      expect(rule.refusedBy.length).toBeGreaterThan(0);
  });
});

describe('web search on a provider without one (Bedrock’s Converse)', () => {
  const offered: ChatRequest = { ...base, web_search: { origin: 'web_search' } };
  const asked: ChatRequest = { ...base, web_search: {} };

  it('drops and lists a search offered as a Responses tool; refuses one asked for outright', () => {
    expect(untranslatableFields(offered, 'anthropic', ['web_search'])).toEqual([]);
    expect(droppedFields(offered, 'anthropic', ['web_search'])).toEqual(['web_search']);
    expect(untranslatableFields(asked, 'anthropic', ['web_search']).map((f) => f.field)).toEqual([
      'web_search',
    ]);
  });

  it('is not dropped by a provider that searches — Gemini drops one offered beside functions', () => {
    for (const kind of KINDS) expect(droppedFields(offered, kind)).toEqual([]);
    const beside: ChatRequest = { ...offered, tools: [{ type: 'function', function: { name: 'f' } }] };
    expect(droppedFields(beside, 'google')).toEqual(['web_search']);
    expect(droppedFields(beside, 'anthropic')).toEqual([]);
    expect(droppedFields({ ...asked, tools: beside.tools }, 'google')).toEqual([]);
    // Gemini 3 on the Gemini API keeps it (ProviderTraits.keeps); other hints are still listed.
    expect(droppedFields(beside, 'google', [], ['web_search'])).toEqual([]);
    expect(droppedFields({ ...beside, user: 'u' }, 'google', [], ['web_search'])).toEqual(['user']);
  });

  it('refuses one asked for beside functions where the model cannot run the two (Gemini 2, Vertex AI)', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    const refuses = [SEARCH_BESIDE_FUNCTIONS];
    expect(() => assertTranslatable({ ...asked, tools }, 'google', refuses)).toThrow(
      'web_search cannot be sent to this provider: this model does not search the web beside function tools',
    );
    // Alone, or only offered (left out and listed instead), or where the model runs both: sent.
    expect(untranslatableFields(asked, 'google', refuses)).toEqual([]);
    expect(untranslatableFields({ ...offered, tools }, 'google', refuses)).toEqual([]);
    expect(untranslatableFields({ ...asked, tools }, 'google')).toEqual([]);
    expect(untranslatableFields({ ...base, tools }, 'google', refuses)).toEqual([]);
  });
});

describe('droppedFields', () => {
  const cc = { type: 'ephemeral' } as const;
  const hinted: ChatRequest = {
    ...base,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: cc }] }],
    prompt_cache_key: 'k',
    prompt_cache_retention: '24h',
    prompt_cache_options: { mode: 'explicit', ttl: '30m' },
    service_tier: 'default',
    verbosity: 'low',
    store: true,
    metadata: { a: 'b' },
    safety_identifier: 's',
    user: 'u',
    parallel_tool_calls: false,
    tools: [{ type: 'function', function: { name: 'f' }, eager_input_streaming: true }],
  };

  // What each kind of provider drops of the same request: OpenAI keeps its own hints and drops
  // cache breakpoints; Anthropic keeps breakpoints and eager tool streaming, maps service_tier and
  // user; Gemini keeps none.
  const openAiOnly: string[] = [...OPENAI_HINT_FIELDS];
  const eager = 'tools.eager_input_streaming';
  const expected: [TargetKind, string[]][] = [
    ['openai', ['cache_control', eager]],
    ['openai-compatible', ['cache_control', eager, ...openAiOnly]],
    ['anthropic', openAiOnly.filter((f) => f !== 'service_tier')],
    ['google', ['cache_control', eager, ...openAiOnly, 'user', 'parallel_tool_calls']],
  ];
  it.each(expected)('%s drops what it has no equivalent for', (kind, fields) => {
    expect(droppedFields(hinted, kind)).toEqual(fields);
  });

  it('also drops the hints a provider lists for a model (when set), though its kind keeps them', () => {
    const beta: ChatRequest = { ...base, anthropic_beta: 'interleaved-thinking-2025-05-14' };
    expect(droppedFields(beta, 'anthropic')).toEqual([]);
    expect(droppedFields(beta, 'anthropic', ['anthropic-beta'])).toEqual(['anthropic-beta']);
    expect(droppedFields(base, 'anthropic', ['anthropic-beta'])).toEqual([]);
  });

  it('drops nothing from a request without hints, and keeps no-op values', () => {
    const plain: ChatRequest = { ...base, store: false, metadata: {}, parallel_tool_calls: false };
    for (const kind of [...KINDS, 'openai-compatible'] as const)
      expect(droppedFields(plain, kind)).toEqual([]);
  });

  it('Anthropic: a flex tier is dropped, safety_identifier stands in for user, past 4 breakpoints drop', () => {
    expect(droppedFields({ ...base, service_tier: 'flex' }, 'anthropic')).toEqual(['service_tier']);
    expect(droppedFields({ ...base, service_tier: 'constructor' }, 'anthropic')).toEqual(['service_tier']);
    expect(droppedFields({ ...base, safety_identifier: 's' }, 'anthropic')).toEqual([]);
    const many: ChatRequest = {
      ...base,
      cache_control: cc,
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: cc }],
      messages: [
        { role: 'system', content: 'a', cache_control: cc },
        { role: 'user', content: [{ type: 'text', text: 'b', cache_control: cc }] },
      ],
    };
    expect(droppedFields(many, 'anthropic')).toEqual([]);
    many.messages.push({ role: 'tool', tool_call_id: 'x', content: 'c', cache_control: cc });
    expect(droppedFields(many, 'anthropic')).toEqual(['cache_control']);
  });

  it("puts the parser's own list first, once", () => {
    const req: ChatRequest = { ...base, dropped: ['context_management', 'tools[2]'], verbosity: 'high' };
    expect(droppedFields(req, 'google')).toEqual(['context_management', 'tools[2]', 'verbosity']);
    expect(droppedFields(req, 'openai')).toEqual(['context_management', 'tools[2]']);
  });
});
