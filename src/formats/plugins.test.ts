import { describe, expect, it } from 'vitest';
import type { ChatRequest } from './chat.js';
import { TranslationError } from './chat.js';
import { chatRequestFromBody } from './chat-edge.js';
import { lanePlugins, lanePluginsDropped, readPlugins, withPlugins } from './plugins.js';
import { serverToolsOf } from './web-search.js';

const location = { type: 'approximate' as const, city: 'Paris', country: 'FR' };

describe('readPlugins', () => {
  it("maps the web plugin's settings the canonical search has, lists the others", () => {
    const out = readPlugins({
      plugins: [
        {
          id: 'web',
          max_results: 3,
          search_prompt: 'Results:',
          engine: 'exa',
          max_uses: 2,
          include_domains: ['a.com'],
          exclude_domains: ['b.com'],
          user_location: location,
        },
      ],
    });
    expect(out.web).toEqual({
      max_uses: 2,
      allowed_domains: ['a.com'],
      blocked_domains: ['b.com'],
      user_location: location,
    });
    expect(out.dropped).toEqual([
      'plugins.web.max_results',
      'plugins.web.search_prompt',
      'plugins.web.engine',
    ]);
  });

  it("the provider's own engine (native, auto) is what Gatehouse does: not listed", () => {
    for (const engine of ['native', 'auto'])
      expect(readPlugins({ plugins: [{ id: 'web', engine }] })).toEqual({ web: {}, dropped: [] });
  });

  it('every other plugin is listed as plugins.<id>; a disabled plugin is neither applied nor listed', () => {
    const out = readPlugins({
      plugins: [
        { id: 'file-parser', pdf: { engine: 'mistral-ocr' } },
        { id: 'response-healing' },
        { id: 'moderation', enabled: false },
        { id: 'web', enabled: false },
      ],
    });
    expect(out).toEqual({ dropped: ['plugins.file-parser', 'plugins.response-healing'] });
    expect(readPlugins({})).toEqual({ dropped: [] });
    expect(readPlugins({ plugins: null })).toEqual({ dropped: [] });
  });

  it('refuses a malformed list, naming the path', () => {
    const cases: [unknown, string][] = [
      [{ id: 'web' }, 'plugins: must be an array'],
      [['web'], 'plugins[0]: must be an object'],
      [[{}], 'plugins[0].id'],
      [[{ id: 7 }], 'plugins[0].id'],
      [[{ id: '' }], 'plugins[0].id'],
      [[{ id: 'web', enabled: 'yes' }], 'plugins[0].enabled'],
      [[{ id: 'web', max_uses: 0 }], 'plugins[0].max_uses'],
      [[{ id: 'web', include_domains: 'a.com' }], 'plugins[0].include_domains'],
    ];
    for (const [plugins, message] of cases) {
      expect(() => readPlugins({ plugins }), JSON.stringify(plugins)).toThrow(TranslationError);
      expect(() => readPlugins({ plugins })).toThrow(message);
    }
  });
});

describe('withPlugins (translated calls)', () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'q' }] };

  it('the web plugin becomes the canonical web_search; the plugins not applied join dropped', () => {
    const sent = { ...body, prediction: { type: 'content', content: 'x' } };
    const req = withPlugins(chatRequestFromBody(sent), {
      ...sent,
      plugins: [{ id: 'web', max_results: 2 }, { id: 'context-compression' }],
    });
    expect(req.web_search).toEqual({});
    expect(req.dropped).toEqual(['prediction', 'plugins.web.max_results', 'plugins.context-compression']);
  });

  it("a web search tool in the same body adds to the plugin's, its settings winning", () => {
    const sent = {
      ...body,
      web_search_options: { search_context_size: 'high' },
      plugins: [{ id: 'web', max_uses: 4, user_location: { type: 'approximate', city: 'Oslo' } }],
    };
    expect(withPlugins(chatRequestFromBody(sent), sent).web_search).toEqual({
      max_uses: 4,
      user_location: { type: 'approximate', city: 'Oslo' },
      search_context_size: 'high',
    });
  });

  it('no plugins: the request as it was', () => {
    const req: ChatRequest = chatRequestFromBody(body);
    expect(withPlugins(req, body)).toBe(req);
  });
});

describe('lanePlugins (pass-through lanes)', () => {
  const web = {
    id: 'web',
    max_uses: 2,
    include_domains: ['a.com'],
    exclude_domains: ['b.com'],
    user_location: location,
    search_prompt: 'x',
  };
  const body = { model: 'm', plugins: [web, { id: 'moderation' }] };

  it('Chat Completions (OpenAI): web_search_options; what it has no field for listed', () => {
    const dropped: string[] = [];
    const out = lanePlugins(body, 'chat', dropped);
    expect(out.web_search_options).toEqual({
      user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
    });
    expect(out.tools).toBeUndefined();
    expect(dropped).toEqual([
      'plugins.web.search_prompt',
      'plugins.moderation',
      'plugins.web.max_uses',
      'plugins.web.exclude_domains',
      'plugins.web.include_domains',
    ]);
    expect(body).not.toHaveProperty('web_search_options');
    expect(lanePlugins({ plugins: [{ id: 'web' }] }, 'chat')).toEqual({
      plugins: [{ id: 'web' }],
      web_search_options: {},
    });
  });

  it('Responses (OpenAI): a web_search tool after the caller’s tools', () => {
    const fn = { type: 'function', name: 'f' };
    const out = lanePlugins({ ...body, tools: [fn] }, 'responses');
    expect(out.tools).toEqual([
      fn,
      { type: 'web_search', user_location: location, filters: { allowed_domains: ['a.com'] } },
    ]);
    expect(lanePluginsDropped(body, 'responses')).toEqual([
      'plugins.web.search_prompt',
      'plugins.moderation',
      'plugins.web.max_uses',
      'plugins.web.exclude_domains',
    ]);
  });

  it('Messages (Anthropic): its web_search server tool (one domain list: the allowed)', () => {
    const out = lanePlugins(body, 'messages');
    expect(out.tools).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        max_uses: 2,
        allowed_domains: ['a.com'],
        user_location: location,
      },
    ]);
    expect(lanePluginsDropped(body, 'messages')).toEqual([
      'plugins.web.search_prompt',
      'plugins.moderation',
      'plugins.web.exclude_domains',
    ]);
    const blocked = lanePlugins({ plugins: [{ id: 'web', exclude_domains: ['b.com'] }] }, 'messages');
    expect(blocked.tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search', blocked_domains: ['b.com'] },
    ]);
  });

  it("the caller's own search stands: the plugin adds none", () => {
    const chat = { web_search_options: { search_context_size: 'low' }, plugins: [{ id: 'web' }] };
    expect(lanePlugins(chat, 'chat')).toBe(chat);
    const responses = { tools: [{ type: 'web_search_preview' }], plugins: [{ id: 'web' }] };
    expect(lanePlugins(responses, 'responses')).toBe(responses);
    const messages = {
      tools: [{ type: 'web_search_20260209', name: 'web_search' }],
      plugins: [{ id: 'web' }],
    };
    expect(lanePlugins(messages, 'messages')).toBe(messages);
  });

  it("beside the caller's own search, the plugin's settings are listed as not applied", () => {
    const plugins = [
      { id: 'web', max_uses: 2, include_domains: ['a.com'], user_location: { type: 'approximate' } },
    ];
    const chat = { web_search_options: {}, plugins };
    expect(lanePluginsDropped(chat, 'chat')).toEqual([
      'plugins.web.max_uses',
      'plugins.web.include_domains',
      'plugins.web.user_location',
    ]);
    const messages = { tools: [{ type: 'web_search_20250305', name: 'web_search' }], plugins };
    expect(lanePlugins(messages, 'messages')).toBe(messages);
    expect(lanePluginsDropped(messages, 'messages')).toHaveLength(3);
    expect(lanePluginsDropped({ web_search_options: {}, plugins: [{ id: 'web' }] }, 'chat')).toEqual([]);
  });

  it('no web plugin, or a malformed list (refused before any lane): the body as it is', () => {
    const none = { plugins: [{ id: 'file-parser' }] };
    expect(lanePlugins(none, 'chat')).toBe(none);
    const bad = { plugins: 'web' };
    expect(lanePlugins(bad, 'chat')).toBe(bad);
  });
});

describe('serverToolsOf', () => {
  it('the web plugin is openrouter:web_search (unless disabled)', () => {
    expect(serverToolsOf({ plugins: [{ id: 'web' }] })).toEqual(['openrouter:web_search']);
    expect(serverToolsOf({ plugins: [{ id: 'web', enabled: false }] })).toEqual([]);
    expect(serverToolsOf({ plugins: [{ id: 'file-parser' }] })).toEqual([]);
  });
});
