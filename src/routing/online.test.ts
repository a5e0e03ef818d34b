import { describe, expect, it } from 'vitest';
import type { InferenceCall } from './call.js';
import { withoutOnline } from './online.js';

const catalog = { lookup: new Map([['vendor/model:online', 'vendor/model-online']]) };
const callOf = (body: Record<string, unknown>, models?: string[]) =>
  ({ model: body.model as string, body, ...(models ? { models } : {}) }) as InferenceCall;

describe('withoutOnline', () => {
  it('takes :online off the model and asks for the web plugin', () => {
    const call = callOf({ model: 'openai/gpt-4o:online', messages: [] });
    const out = withoutOnline(call, catalog);
    expect(out.model).toBe('openai/gpt-4o');
    expect(out.body).toEqual({ model: 'openai/gpt-4o', messages: [], plugins: [{ id: 'web' }] });
    expect(call.body.model).toBe('openai/gpt-4o:online');
  });

  it("in the models fallbacks too; the caller's plugins are kept, its own web entry stands", () => {
    const body = {
      model: 'a/x',
      models: ['a/x', 'b/y:online'],
      plugins: [{ id: 'file-parser' }],
    };
    const out = withoutOnline(callOf(body, body.models), catalog);
    expect(out.model).toBe('a/x');
    expect(out.models).toEqual(['a/x', 'b/y']);
    expect(out.body.models).toEqual(['a/x', 'b/y']);
    expect(out.body.plugins).toEqual([{ id: 'file-parser' }, { id: 'web' }]);
    const own = { model: 'a/x:online', plugins: [{ id: 'web', max_uses: 2 }] };
    expect(withoutOnline(callOf(own), catalog).body.plugins).toEqual(own.plugins);
  });

  it('leaves other suffixes, and a catalog id ending in :online, as they are', () => {
    for (const model of ['openai/gpt-4o', 'openai/gpt-4o:free', 'vendor/model:online', ':online']) {
      const call = callOf({ model });
      expect(withoutOnline(call, catalog)).toBe(call);
    }
  });
});
