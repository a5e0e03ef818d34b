import { badRequest } from '../lib/errors.js';
import { unknownProviderSlugs } from '../lib/provider-slugs.js';
import type { ResetInterval } from '../lib/time.js';
import { compileCustomPattern } from './custom-patterns.js';

/** The value vocabularies of a guardrail's fields (digest §1.1) and their normalisation. */

export const RESET_INTERVALS = ['daily', 'weekly', 'monthly'] as const satisfies readonly ResetInterval[];
export const DATA_REGIONS = ['global', 'europe', 'us'] as const;
export const FILTER_ACTIONS = ['redact', 'block', 'flag'] as const;
export const SCAN_SCOPES = ['user_only', 'all_messages'] as const;
/** What a content filter reads: the caller's request (default), the model's answer, or both. */
export const APPLY_TO = ['request', 'response', 'both'] as const;
export const ZDR_VENDORS = ['anthropic', 'google', 'openai', 'other', 'xai'] as const;

export type DataRegion = (typeof DATA_REGIONS)[number];
export type FilterAction = (typeof FILTER_ACTIONS)[number];
export type ScanScope = (typeof SCAN_SCOPES)[number];
export type ApplyTo = (typeof APPLY_TO)[number];

/** Built-in content filters and the human label each one is shown with. */
export const BUILTIN_LABELS = {
  email: 'Email addresses',
  phone: 'Phone numbers',
  ssn: 'Social Security numbers',
  'credit-card': 'Credit card numbers',
  'ip-address': 'IP addresses',
  secrets: 'Secrets and credentials',
  'person-name': 'Person names',
  address: 'Postal addresses',
  'regex-prompt-injection': 'Prompt injection',
} as const;
export type BuiltinSlug = keyof typeof BUILTIN_LABELS;
export const BUILTIN_SLUGS = Object.keys(BUILTIN_LABELS) as BuiltinSlug[];

/** The only built-in filter whose scan scope matters. */
const PROMPT_INJECTION: BuiltinSlug = 'regex-prompt-injection';

export interface ContentFilter {
  pattern: string;
  action: FilterAction;
  label?: string | null;
  /** Stored only when not `request`. */
  apply_to?: ApplyTo;
}

export interface BuiltinFilterInput {
  slug: BuiltinSlug;
  action: FilterAction;
  /** Deprecated and ignored: the label is derived from the slug. */
  label?: string;
  scan_scope?: ScanScope;
  apply_to?: ApplyTo;
}

/** A built-in filter as stored (the label is derived on output; `apply_to` only when not `request`). */
export interface StoredBuiltinFilter {
  slug: BuiltinSlug;
  action: FilterAction;
  scan_scope?: ScanScope;
  apply_to?: ApplyTo;
}

/** `apply_to` as stored: absent for the default (`request`), which keeps older guardrails' shape. */
const applyTo = (a: ApplyTo | undefined) => (a && a !== 'request' ? { apply_to: a } : {});

/** Custom regex filters: every pattern must compile on RE2, the engine they run on. */
export function normaliseContentFilters(filters: readonly ContentFilter[]): ContentFilter[] {
  return filters.map((f, i) => {
    const compiled = compileCustomPattern(f.pattern);
    if ('error' in compiled)
      throw badRequest(
        `content_filters[${i}].pattern ${JSON.stringify(f.pattern)} is not supported: ${compiled.error}`,
      );
    return { pattern: f.pattern, action: f.action, label: f.label ?? null, ...applyTo(f.apply_to) };
  });
}

/**
 * Built-in filters: one entry per slug; the input label is dropped; `scan_scope` is kept only for
 * the prompt-injection filter, where it defaults to `all_messages`.
 */
export function normaliseBuiltinFilters(filters: readonly BuiltinFilterInput[]): StoredBuiltinFilter[] {
  const seen = new Set<string>();
  return filters.map((f) => {
    if (!(f.slug in BUILTIN_LABELS)) throw badRequest(`Unknown content filter builtin slug: ${f.slug}`);
    if (seen.has(f.slug)) throw badRequest(`content_filter_builtins lists ${f.slug} more than once`);
    seen.add(f.slug);
    return f.slug === PROMPT_INJECTION
      ? { slug: f.slug, action: f.action, scan_scope: f.scan_scope ?? 'all_messages', ...applyTo(f.apply_to) }
      : { slug: f.slug, action: f.action, ...applyTo(f.apply_to) };
  });
}

/** The wire form of a stored built-in filter: `label` from the slug, `scan_scope` omitted when unset. */
export const builtinFilterView = (f: StoredBuiltinFilter) => ({
  slug: f.slug,
  action: f.action,
  label: BUILTIN_LABELS[f.slug] ?? f.slug,
  ...(f.scan_scope !== undefined ? { scan_scope: f.scan_scope } : {}),
  ...(f.apply_to !== undefined ? { apply_to: f.apply_to } : {}),
});

/** A provider list: known slugs only (400 naming the others), duplicates dropped. */
export function normaliseProviders(field: string, slugs: readonly string[]): string[] {
  const unknown = unknownProviderSlugs(slugs);
  if (unknown.length > 0) {
    throw badRequest(`${field} has unknown provider slugs: ${unknown.join(', ')}`, {
      unknown_provider_slugs: unknown,
    });
  }
  return unique(slugs);
}

/**
 * A model list: non-empty ids or wildcard patterns (`anthropic/*`, `openai/gpt-5*`: `*` is any run
 * of characters), trimmed, duplicates dropped.
 */
export function normaliseModels(field: string, models: readonly string[]): string[] {
  const trimmed = models.map((m) => m.trim());
  if (trimmed.some((m) => m.length === 0)) throw badRequest(`${field} must not contain empty model ids`);
  // Two wildcards at most keep matching linear enough (ids are matched on every call).
  const bad = trimmed.filter((m) => /\s/.test(m) || m.split('*').length > 3);
  if (bad.length > 0)
    throw badRequest(
      `${field} has malformed entries (no spaces; at most two *, each any run of characters): ${bad.join(', ')}`,
    );
  return unique(trimmed);
}

export const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];
