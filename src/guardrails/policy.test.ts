import { describe, expect, it } from 'vitest';
import {
  type ApplicableGuardrail,
  baseModelSlug,
  combinePolicies,
  type EffectivePolicy,
  intersectModelLists,
  modelAllowed,
  type ProviderAttrs,
  providerAllowed,
  regionAllowed,
} from './policy.js';
import type { GuardrailRow } from './store.js';

let seq = 0;
function row(name: string, fields: Partial<Record<keyof GuardrailRow, unknown>> = {}): GuardrailRow {
  const json = (k: string) =>
    fields[k as keyof GuardrailRow] === undefined ? null : JSON.stringify(fields[k as keyof GuardrailRow]);
  return {
    id: `g-${++seq}`,
    organization_id: 'org',
    workspace_id: 'ws',
    name,
    description: null,
    limit_usd: null,
    reset_interval: null,
    include_byok_in_budgets: 0,
    enable_free_model_publication: null,
    enable_free_model_training: null,
    enable_paid_model_training: null,
    enforce_zdr: null,
    enforce_zdr_anthropic: null,
    enforce_zdr_google: null,
    enforce_zdr_openai: null,
    enforce_zdr_other: null,
    enforce_zdr_xai: null,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: null,
    rpm_limit: null,
    tpm_limit: null,
    concurrency_limit: null,
    ...(fields as Partial<GuardrailRow>),
    allowed_data_regions: json('allowed_data_regions'),
    allowed_models: json('allowed_models'),
    allowed_providers: json('allowed_providers'),
    ignored_models: json('ignored_models'),
    ignored_providers: json('ignored_providers'),
    content_filters: json('content_filters'),
    content_filter_builtins: json('content_filter_builtins'),
  };
}

const caller = { keyHash: 'k1', userId: 'u1' };
const combine = (...a: ApplicableGuardrail[]) => combinePolicies(a, caller);
const paidZdr: ProviderAttrs = { zdr: true, vendor: 'openai', trainsOnData: false, isFree: false };

describe('combinePolicies', () => {
  it('with no guardrail, restricts nothing', () => {
    const p = combine();
    expect(p).toMatchObject({
      guardrailIds: [],
      allowedModels: null,
      ignoredModels: [],
      allowedProviders: null,
      ignoredProviders: [],
      allowedDataRegions: null,
      zdr: { anthropic: false, google: false, openai: false, xai: false, other: false },
      allowTraining: { freeModels: true, paidModels: true },
      allowFreeModelPublication: true,
      budgets: [],
      contentFilters: [],
    });
    expect(modelAllowed(p, 'any/model')).toEqual({ ok: true });
    expect(providerAllowed(p, 'openai', { ...paidZdr, zdr: false, trainsOnData: true })).toEqual({
      ok: true,
    });
  });

  it('intersects allow-lists, unions ignore-lists, ORs ZDR and ANDs training permissions', () => {
    const a = row('team', {
      allowed_models: ['openai/gpt-4o', 'anthropic/claude-sonnet-4', 'meta/llama-3'],
      allowed_providers: ['openai', 'anthropic', 'together'],
      allowed_data_regions: ['europe', 'us'],
      ignored_models: ['meta/llama-3'],
      enforce_zdr_anthropic: 1,
      enable_free_model_training: 0,
    });
    const b = row('member', {
      allowed_models: ['openai/gpt-4o', 'meta/llama-3', 'mistral/large'],
      allowed_providers: ['openai', 'together'],
      allowed_data_regions: ['europe'],
      ignored_providers: ['together'],
      enforce_zdr_openai: 0,
      enable_paid_model_training: 1,
    });
    const c = row('default', { ignored_models: ['x/y'], enforce_zdr_google: 1 });
    const p = combine({ row: a, via: 'key' }, { row: b, via: 'member' }, { row: c, via: 'default' });
    expect(p.guardrailIds).toEqual([a.id, b.id, c.id]);
    expect(p.allowedModels?.sort()).toEqual(['meta/llama-3', 'openai/gpt-4o']);
    expect(p.ignoredModels.sort()).toEqual(['meta/llama-3', 'x/y']);
    expect(p.allowedProviders).toEqual(['openai', 'together']);
    expect(p.ignoredProviders).toEqual(['together']);
    expect(p.allowedDataRegions).toEqual(['europe']);
    expect(p.zdr).toEqual({ anthropic: true, google: true, openai: false, xai: false, other: false });
    expect(p.allowTraining).toEqual({ freeModels: false, paidModels: true });
    expect(p.sources).toEqual({
      allowedModels: ['team', 'member'],
      allowedProviders: ['team', 'member'],
      ignoredModels: ['team', 'default'],
      ignoredProviders: ['member'],
    });
  });

  it('an empty allow-list allows nothing and is named as the source', () => {
    const p = combine({ row: row('lockdown', { allowed_models: [] }), via: 'key' });
    expect(p.allowedModels).toEqual([]);
    expect(modelAllowed(p, 'openai/gpt-4o')).toEqual({
      ok: false,
      reason: 'Model openai/gpt-4o is not in the allowed models of guardrail "lockdown"',
    });
  });

  it('scopes budgets: key and default guardrails to the key, member guardrails to the user', () => {
    const k = row('key budget', { limit_usd: 10, reset_interval: 'daily', include_byok_in_budgets: 1 });
    const m = row('team budget', { limit_usd: 100, reset_interval: 'monthly' });
    const d = row('default', { limit_usd: 5, reset_interval: 'weekly' });
    const none = row('no budget');
    const p = combine(
      { row: k, via: 'key' },
      { row: m, via: 'member' },
      { row: none, via: 'member' },
      { row: d, via: 'default' },
    );
    expect(p.budgets).toEqual([
      {
        guardrailId: k.id,
        guardrailName: 'key budget',
        limitUsd: 10,
        interval: 'daily',
        includeByok: true,
        scope: { keyHash: 'k1' },
      },
      {
        guardrailId: m.id,
        guardrailName: 'team budget',
        limitUsd: 100,
        interval: 'monthly',
        includeByok: false,
        scope: { userId: 'u1' },
      },
      {
        guardrailId: d.id,
        guardrailName: 'default',
        limitUsd: 5,
        interval: 'weekly',
        includeByok: false,
        scope: { keyHash: 'k1' },
      },
    ]);
  });

  it('counts a guardrail reached twice once; its budget then follows the user', () => {
    const g = row('both', { limit_usd: 1, reset_interval: 'daily', ignored_models: ['a/b'] });
    const p = combine({ row: g, via: 'key' }, { row: g, via: 'member' });
    expect(p.guardrailIds).toEqual([g.id]);
    expect(p.budgets).toHaveLength(1);
    expect(p.budgets[0]?.scope).toEqual({ userId: 'u1' });
    // Without a user (an organization key), member scoping cannot apply.
    const orgKey = combinePolicies([{ row: g, via: 'member' }], { keyHash: 'k2', userId: null });
    expect(orgKey.budgets[0]?.scope).toEqual({ keyHash: 'k2' });
  });

  it('compiles the content filters of every guardrail', () => {
    const p = combine(
      { row: row('a', { content_filter_builtins: [{ slug: 'email', action: 'redact' }] }), via: 'key' },
      {
        row: row('b', { content_filters: [{ pattern: 'secret', action: 'block', label: 'S' }] }),
        via: 'default',
      },
    );
    expect(p.contentFilters.map((f) => [f.kind, f.label, f.action])).toEqual([
      ['builtin', 'Email addresses', 'redact'],
      ['custom', 'S', 'block'],
    ]);
  });
});

describe('model matching', () => {
  it('strips only a :variant suffix', () => {
    expect(baseModelSlug('openai/gpt-4o:free')).toBe('openai/gpt-4o');
    expect(baseModelSlug('openai/gpt-4o')).toBe('openai/gpt-4o');
    expect(baseModelSlug('ollama:8080/x')).toBe('ollama:8080/x');
  });

  it('an entry covers its variants; a variant entry does not cover the base model', () => {
    const p = combine({
      row: row('team budget', { allowed_models: ['openai/gpt-4o', 'meta/llama:free'] }),
      via: 'key',
    });
    expect(modelAllowed(p, 'openai/gpt-4o')).toEqual({ ok: true });
    expect(modelAllowed(p, 'OpenAI/GPT-4o:nitro')).toEqual({ ok: true });
    expect(modelAllowed(p, 'meta/llama:free')).toEqual({ ok: true });
    expect(modelAllowed(p, 'meta/llama')).toEqual({
      ok: false,
      reason: 'Model meta/llama is not in the allowed models of guardrail "team budget"',
    });
    // The canonical slug may match instead.
    expect(modelAllowed(p, 'openai/gpt-4o-2024-08-06', ['openai/gpt-4o'])).toEqual({ ok: true });
  });

  it('wildcard entries cover every matching id, variants and unlisted pass-through ids included', () => {
    const p = combine(
      { row: row('vendors', { allowed_models: ['anthropic/*', 'openai/gpt-5*'] }), via: 'key' },
      { row: row('no previews', { ignored_models: ['*-preview'] }), via: 'default' },
    );
    expect(modelAllowed(p, 'anthropic/claude-next-20270101')).toEqual({ ok: true });
    expect(modelAllowed(p, 'openai/gpt-5.4-mini:nitro')).toEqual({ ok: true });
    expect(modelAllowed(p, 'openai/gpt-4o')).toEqual({
      ok: false,
      reason: 'Model openai/gpt-4o is not in the allowed models of guardrail "vendors"',
    });
    expect(modelAllowed(p, 'openai/gpt-5-preview')).toEqual({
      ok: false,
      reason: 'Model openai/gpt-5-preview is in the ignored models of guardrail "no previews"',
    });
    // A pattern is literal apart from `*`.
    expect(modelAllowed(p, 'openai/gpt-5x')).toEqual({ ok: true });
    const dots = combine({ row: row('dots', { allowed_models: ['google/gemini-2.5*'] }), via: 'key' });
    expect(modelAllowed(dots, 'google/gemini-2x5-pro').ok).toBe(false);
    expect(modelAllowed(dots, 'google/gemini-2.5-pro').ok).toBe(true);
  });

  it('intersecting a wildcard with a narrower list keeps the narrower entries', () => {
    expect(
      intersectModelLists([
        ['anthropic/*', 'openai/*'],
        ['anthropic/claude-sonnet-4', 'openai/gpt-5*', 'google/gemini-2.5-pro'],
      ]).sort(),
    ).toEqual(['anthropic/claude-sonnet-4', 'openai/gpt-5*']);
  });

  it('intersection under the matching rule keeps the narrower entry', () => {
    expect(
      intersectModelLists([
        ['a/x', 'b/y'],
        ['a/x:free', 'c/z'],
      ]),
    ).toEqual(['a/x:free']);
  });

  it('names the guardrail whose list refuses', () => {
    const p = combine(
      { row: row('wide', { allowed_models: ['a/x', 'b/y'] }), via: 'key' },
      { row: row('narrow', { allowed_models: ['a/x'] }), via: 'member' },
      { row: row('ban', { ignored_models: ['a/x'] }), via: 'default' },
    );
    expect(modelAllowed(p, 'b/y')).toEqual({
      ok: false,
      reason: 'Model b/y is not in the allowed models of guardrail "narrow"',
    });
    expect(modelAllowed(p, 'a/x:free')).toEqual({
      ok: false,
      reason: 'Model a/x:free is in the ignored models of guardrail "ban"',
    });
  });

  it('falls back to the sources for a policy built elsewhere', () => {
    const p: EffectivePolicy = {
      ...combine(),
      allowedModels: ['a/x'],
      sources: { ...combine().sources, allowedModels: ['x', 'y'] },
    };
    expect(modelAllowed(p, 'b/y')).toEqual({
      ok: false,
      reason: 'Model b/y is not in the allowed models of guardrails "x", "y"',
    });
  });
});

describe('providerAllowed and regionAllowed', () => {
  const p = combine(
    {
      row: row('providers', { allowed_providers: ['openai', 'amazon-bedrock', 'google-vertex'] }),
      via: 'key',
    },
    { row: row('no vertex', { ignored_providers: ['google-vertex'] }), via: 'member' },
    { row: row('zdr', { enforce_zdr_anthropic: 1, allowed_data_regions: ['europe'] }), via: 'member' },
    { row: row('no training', { enable_paid_model_training: 0 }), via: 'default' },
  );

  it('checks the provider lists', () => {
    expect(providerAllowed(p, 'openai', paidZdr)).toEqual({ ok: true });
    expect(providerAllowed(p, 'amazon-bedrock/claude-on-aws', paidZdr)).toEqual({ ok: true });
    expect(providerAllowed(p, 'together', paidZdr)).toEqual({
      ok: false,
      reason: 'Provider together is not in the allowed providers of guardrail "providers"',
    });
    expect(providerAllowed(p, 'google-vertex', paidZdr)).toEqual({
      ok: false,
      reason: 'Provider google-vertex is in the ignored providers of guardrail "no vertex"',
    });
  });

  it('checks ZDR per vendor', () => {
    const anthropicNoZdr: ProviderAttrs = {
      zdr: false,
      vendor: 'anthropic',
      trainsOnData: false,
      isFree: false,
    };
    expect(providerAllowed(p, 'amazon-bedrock', anthropicNoZdr)).toEqual({
      ok: false,
      reason:
        'Provider amazon-bedrock does not guarantee zero data retention, which guardrail "zdr" requires for anthropic models',
    });
    expect(providerAllowed(p, 'amazon-bedrock', { ...anthropicNoZdr, zdr: true })).toEqual({ ok: true });
    expect(providerAllowed(p, 'openai', { ...anthropicNoZdr, vendor: 'openai' })).toEqual({ ok: true });
  });

  it('checks training permissions for free and paid models', () => {
    expect(providerAllowed(p, 'openai', { ...paidZdr, trainsOnData: true })).toEqual({
      ok: false,
      reason:
        'Provider openai may train on prompts, which guardrail "no training" does not allow for paid models',
    });
    expect(providerAllowed(p, 'openai', { ...paidZdr, trainsOnData: true, isFree: true })).toEqual({
      ok: true,
    });
  });

  it('checks data regions', () => {
    expect(regionAllowed(p, 'europe')).toEqual({ ok: true });
    expect(regionAllowed(p, 'us')).toEqual({
      ok: false,
      reason: 'Data region us is not in the allowed data regions of guardrail "zdr"',
    });
  });
});
