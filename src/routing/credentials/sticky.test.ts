import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { conversationKey, StickyRoutes } from './sticky.js';

describe('conversation keys', () => {
  const user = { role: 'user', content: 'Summarise this contract' };
  const system = { role: 'system', content: 'You are a lawyer' };

  it('use the caller’s own cache key or user id first', () => {
    const key = (native: Parameters<typeof conversationKey>[0], body: object) =>
      conversationKey(native, body as never);
    const byCacheKey = key('openai-chat', { prompt_cache_key: 'conv-1', user: 'u', messages: [user] });
    expect(byCacheKey).toBe(key('openai-chat', { prompt_cache_key: 'conv-1', messages: [system, user] }));
    expect(byCacheKey).not.toBe(key('openai-chat', { user: 'u', messages: [user] }));
    expect(key('openai-chat', { safety_identifier: 's-1', user: 'u', messages: [user] })).toBe(
      key('openai-chat', { safety_identifier: 's-1', messages: [system] }),
    );
    expect(key('openai-responses', { user: 'u-2', input: 'hi' })).toBe(
      key('openai-responses', { user: 'u-2', input: 'other' }),
    );
    expect(key('anthropic-messages', { metadata: { user_id: 'u-3' }, messages: [user] })).toBe(
      key('anthropic-messages', { metadata: { user_id: 'u-3' }, messages: [system] }),
    );
    // A key of a bounded size, whatever the caller sent.
    expect(key('openai-chat', { prompt_cache_key: 'x'.repeat(100_000), messages: [user] })).toHaveLength(22);
  });

  it('else hash the opening: the same for every later turn, another for another conversation', () => {
    const first = conversationKey('openai-chat', { messages: [system, user] });
    const second = conversationKey('openai-chat', {
      messages: [
        system,
        user,
        { role: 'assistant', content: 'Sure.' },
        { role: 'user', content: 'And clause 4?' },
      ],
    });
    const other = conversationKey('openai-chat', { messages: [system, { role: 'user', content: 'Other' }] });
    expect(first).toHaveLength(22);
    expect(second).toBe(first);
    expect(other).not.toBe(first);
    expect(first).not.toContain('lawyer'); // a hash, not the text

    const a1 = conversationKey('anthropic-messages', { system: 'Be brief', messages: [user] });
    const a2 = conversationKey('anthropic-messages', {
      system: 'Be brief',
      messages: [user, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }],
    });
    expect(a1).toBe(a2);
    const r1 = conversationKey('openai-responses', { instructions: 'x', input: [user] });
    const r2 = conversationKey('openai-responses', {
      instructions: 'x',
      input: [user, { role: 'user', content: 'more' }],
    });
    expect(r1).toBe(r2);
  });

  it('are null for bodies that are no conversation', () => {
    expect(conversationKey('openai-embeddings', { input: 'x' })).toBeNull();
    expect(conversationKey('anthropic-count-tokens', { messages: [user] })).toBeNull();
    expect(conversationKey('openai-chat', { messages: [] })).toBeNull();
  });
});

describe('sticky routes', () => {
  beforeEach(() => vi.useFakeTimers({ now: 5_000_000 }));
  afterEach(() => vi.useRealTimers());
  const route = { provider: 'openai', credential: 'b' };

  it('remember a route per API key and model, until the TTL passes after the last turn', () => {
    const s = new StickyRoutes({ max: 10, ttlMs: 60_000, now: Date.now });
    s.set('key-1', 'conv', 'm', route);
    expect(s.get('key-1', 'conv', 'm')).toEqual(route);
    expect(s.get('key-2', 'conv', 'm')).toBeUndefined(); // another API key: not shared
    expect(s.get('key-1', 'conv', 'other-model')).toBeUndefined();
    vi.advanceTimersByTime(50_000);
    s.set('key-1', 'conv', 'm', route); // a turn: the TTL starts again
    vi.advanceTimersByTime(50_000);
    expect(s.get('key-1', 'conv', 'm')).toEqual(route);
    vi.advanceTimersByTime(10_001);
    expect(s.get('key-1', 'conv', 'm')).toBeUndefined();
  });

  it('is bounded: the least recently used conversation goes first', () => {
    const s = new StickyRoutes({ max: 2, ttlMs: 60_000 });
    s.set('k', 'c1', 'm', route);
    s.set('k', 'c2', 'm', route);
    s.get('k', 'c1', 'm');
    s.set('k', 'c3', 'm', route);
    expect(s.size).toBe(2);
    expect(s.get('k', 'c2', 'm')).toBeUndefined();
    expect(s.get('k', 'c1', 'm')).toEqual(route);
  });
});
