import { ApiError } from '../lib/errors.js';
import type { ModelEntry } from '../routing/catalog.js';

/**
 * The catalog as Anthropic's Models API answers it, for callers that speak Anthropic's API: the
 * official client's `models.list` and `models.retrieve`, and Claude Code's model discovery through
 * a gateway (`GET {ANTHROPIC_BASE_URL}/v1/models?limit=1000`). They are told apart by the
 * `anthropic-version` header every Anthropic client sends.
 */

/** Whether a request comes from an Anthropic client (which sends `anthropic-version` on every call). */
export const speaksAnthropic = (headers: Record<string, unknown>): boolean =>
  typeof headers['anthropic-version'] === 'string';

/** Anthropic's `ModelInfo`. The catalog knows no release date, line, lifecycle or capability matrix. */
export function anthropicModelView(m: ModelEntry) {
  const contexts = m.endpoints.map((e) => e.contextLength).filter((n) => n > 0);
  const outputs = m.endpoints
    .map((e) => e.maxCompletionTokens)
    .filter((n): n is number => typeof n === 'number');
  return {
    type: 'model' as const,
    id: m.id,
    display_name: m.name,
    // "May be set to an epoch value if the release date is unknown" (Anthropic's API reference).
    created_at: '1970-01-01T00:00:00Z',
    max_input_tokens: contexts.length ? Math.max(...contexts) : null,
    max_tokens: outputs.length ? Math.max(...outputs) : null,
    capabilities: null,
    lifecycle: 'active' as const,
    line: null,
    deprecated_at: null,
    retires_at: null,
  };
}

/** The query of Anthropic's model list: `limit` (1–1000, 20 by default), `after_id`, `before_id`, `lifecycle`. */
export interface AnthropicListQuery {
  limit: number;
  afterId?: string;
  beforeId?: string;
  /** The lifecycle stages asked for; every Gatehouse model is `active`. */
  lifecycle?: string[];
}

/** Reads the list's parameters from the URL's own query (the route's schema fills in its defaults). */
export function anthropicListQuery(url: string): AnthropicListQuery {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const limitText = params.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new ApiError(400, 'limit: must be an integer from 1 to 1000');
  const lifecycle = [...params.getAll('lifecycle'), ...params.getAll('lifecycle[]')];
  return {
    limit,
    afterId: params.get('after_id') ?? undefined,
    beforeId: params.get('before_id') ?? undefined,
    lifecycle: lifecycle.length ? lifecycle.flatMap((s) => s.split(',')) : undefined,
  };
}

/**
 * A page of Anthropic's list, `{data, has_more, first_id, last_id}`: after `after_id` or, going
 * backwards, before `before_id` (the page just before it), in the catalog's order.
 */
export function anthropicModelPage(models: ModelEntry[], q: AnthropicListQuery) {
  const listed =
    q.lifecycle && !q.lifecycle.includes('active') ? [] : models.filter((m) => m.kind === 'chat');
  const at = (name: string, id: string) => {
    const i = listed.findIndex((m) => m.id === id);
    if (i < 0) throw new ApiError(400, `${name}: no model has the id ${JSON.stringify(id)}`);
    return i;
  };
  let start = 0;
  let end = listed.length;
  if (q.beforeId !== undefined) {
    end = at('before_id', q.beforeId);
    start = Math.max(0, end - q.limit);
  } else {
    if (q.afterId !== undefined) start = at('after_id', q.afterId) + 1;
    end = Math.min(listed.length, start + q.limit);
  }
  const data = listed.slice(start, end).map(anthropicModelView);
  return {
    data,
    // Going backwards, "more" is what lies before the page.
    has_more: q.beforeId !== undefined ? start > 0 : end < listed.length,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
  };
}
