import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findModel, loadCatalog } from './catalog.js';
import { limitsFor } from './catalog-limits.js';
import type { ModelLimits } from './catalog-types.js';

const listed = (id: string, maxOutputTokens: number | null, maxInputTokens: number | null = null) => ({
  id,
  maxOutputTokens,
  maxInputTokens,
});

describe('limitsFor: an upstream id and the ids a Models API lists', () => {
  const list: ModelLimits[] = [
    listed('claude-sonnet-4-5-20250929', 64000),
    listed('claude-opus-4-20250514', 32000),
    listed('claude-3-5-haiku-20241022', 8192),
    listed('claude-haiku-4-5', 64000),
    listed('claude-haiku-4-5-20251001', 1),
  ];
  it.each([
    ['claude-sonnet-4-5', 64000], // an alias: the listed id is dated
    ['claude-sonnet-4-5-20250929', 64000], // the listed id itself
    ['claude-sonnet-4-5-20240101', 64000], // another snapshot of the same model
    ['claude-opus-4-0', 32000], // Anthropic's `-0` alias
    ['claude-3-5-haiku-latest', 8192], // and `-latest`
    ['claude-haiku-4-5', 64000], // the exact id wins over an alias
  ])('%s → %s', (upstream, max) => {
    expect(limitsFor(list, upstream)?.maxOutputTokens).toBe(max);
  });
  it.each(['claude-sonnet-4', 'claude-sonnet-4-5-1', 'claude-opus-4-1', 'gpt-4o'])('%s: none', (upstream) => {
    expect(limitsFor(list, upstream)).toBeUndefined();
  });
});

const dir = mkdtempSync(join(tmpdir(), 'limits-'));
const config = (body: object) => {
  const path = join(dir, `gatehouse-${Math.random()}.json`);
  writeFileSync(path, JSON.stringify(body));
  return { GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false' };
};
const anthropic = { slug: 'anthropic', kind: 'anthropic', base_url: 'http://127.0.0.1:1', api_key: 'k' };
const limits = new Map([
  [
    'anthropic',
    [listed('claude-sonnet-4-5-20250929', 64000, 1_000_000), listed('claude-new-20990101', 50000, 400_000)],
  ],
]);

describe('learned limits in the catalog', () => {
  it("fill the model data's Anthropic endpoints' output limit; a known context length stays", () => {
    const c = loadCatalog(config({ providers: [anthropic] }), new Map(), limits);
    expect(findModel(c, 'anthropic/claude-sonnet-4.5')?.endpoints[0]).toMatchObject({
      upstreamModel: 'claude-sonnet-4-5',
      maxCompletionTokens: 64000,
      contextLength: 200_000,
    });
    // Another provider of the anthropic kind learned nothing: its endpoints stay unknown.
    expect(
      loadCatalog(config({ providers: [anthropic] })).models.get('anthropic/claude-sonnet-4.5')?.endpoints[0]
        ?.maxCompletionTokens,
    ).toBeNull();
  });

  it("GATEHOUSE_CONFIG's stated values win; an assumed context length is replaced", () => {
    const c = loadCatalog(
      config({
        providers: [anthropic, { slug: 'bedrock', kind: 'bedrock', region: 'us-east-1' }],
        models: [
          {
            id: 'acme/stated',
            endpoints: [
              {
                provider: 'anthropic',
                upstream_model: 'claude-new',
                max_completion_tokens: 1000,
                context_length: 9000,
              },
            ],
          },
          {
            id: 'acme/unstated',
            endpoints: [
              { provider: 'anthropic', upstream_model: 'claude-new' },
              { provider: 'bedrock', upstream_model: 'anthropic.claude-new-v1:0' },
            ],
          },
        ],
      }),
      new Map(),
      limits,
    );
    expect(c.models.get('acme/stated')?.endpoints[0]).toMatchObject({
      maxCompletionTokens: 1000,
      contextLength: 9000,
    });
    const [direct, bedrock] = c.models.get('acme/unstated')?.endpoints ?? [];
    expect(direct).toMatchObject({ maxCompletionTokens: 50000, contextLength: 400_000 });
    expect(direct?.contextAssumed).toBeUndefined();
    // The same model on Bedrock: the output limit learned from Anthropic.
    expect(bedrock).toMatchObject({ maxCompletionTokens: 50000, contextAssumed: true });
  });

  it('reach every Anthropic provider of a model, each from its own listing', () => {
    const proxy = { ...anthropic, slug: 'claude-proxy', base_url: 'http://127.0.0.1:2' };
    const c = loadCatalog(
      config({
        providers: [anthropic, proxy],
        models: [
          {
            id: 'acme/two',
            endpoints: [
              { provider: 'anthropic', upstream_model: 'claude-new' },
              { provider: 'claude-proxy', upstream_model: 'claude-new' },
            ],
          },
        ],
      }),
      new Map(),
      new Map([...limits, ['claude-proxy', [listed('claude-new', 20000, 100_000)]]]),
    );
    const [first, second] = c.models.get('acme/two')?.endpoints ?? [];
    expect(first).toMatchObject({ maxCompletionTokens: 50000, contextLength: 400_000 });
    expect(second).toMatchObject({ maxCompletionTokens: 20000, contextLength: 100_000 });
  });

  it('reach an id passed through to Anthropic that the catalog does not list', () => {
    const c = loadCatalog(config({ providers: [anthropic] }), new Map(), limits);
    expect(findModel(c, 'claude-new')).toMatchObject({
      unlisted: true,
      endpoints: [{ provider: 'anthropic', upstreamModel: 'claude-new', maxCompletionTokens: 50000 }],
    });
  });
});
