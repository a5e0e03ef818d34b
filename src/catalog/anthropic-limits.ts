import { request } from 'undici';
import { anthropicUrl } from '../providers/anthropic/adapter.js';
import { ANTHROPIC_VERSION } from '../providers/anthropic/wire.js';
import type { ModelLimits, ProviderEntry } from '../routing/catalog-types.js';

/** Pages read at most (1000 models each): a listing that never ends is cut there. */
const MAX_PAGES = 10;

/**
 * The Anthropic providers asked for their models' limits: those with an operator key (a BYOK-only
 * provider has none to ask with) and not turned off with `discover_models: false`.
 */
export const limitsAskable = (providers: Iterable<ProviderEntry>): ProviderEntry[] =>
  [...providers].filter(
    (p) => p.config.kind === 'anthropic' && p.config.apiKey && p.discoverModels !== false,
  );

const limit = (v: unknown): number | null =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null;

/**
 * Each model's limits as Anthropic's Models API gives them (`GET {base}/v1/models`, paged with
 * `after_id`): `max_tokens`, the most a call may ask for, and `max_input_tokens`.
 */
export async function listAnthropicLimits(p: ProviderEntry, timeoutMs = 5_000): Promise<ModelLimits[]> {
  const url = `${anthropicUrl(p.config.baseUrl, 'models')}?limit=1000`;
  const out: ModelLimits[] = [];
  let after: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await request(after ? `${url}&after_id=${encodeURIComponent(after)}` : url, {
      method: 'GET',
      headers: {
        accept: 'application/json',
        'anthropic-version': ANTHROPIC_VERSION,
        ...p.config.headers,
        'x-api-key': p.config.apiKey ?? '',
      },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    // An Anthropic-format server without the Models API (a proxy, a compatible server) has no
    // limits to tell: an answer, not a failure retried and warned about every 30 s.
    if (res.statusCode === 404 || res.statusCode === 405) {
      await res.body.dump();
      return out;
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`GET /v1/models answered ${res.statusCode}`);
    }
    const body = (await res.body.json()) as { data?: unknown; has_more?: unknown; last_id?: unknown } | null;
    if (!Array.isArray(body?.data)) throw new Error('GET /v1/models answered no data list');
    for (const m of body.data as { id?: unknown; max_tokens?: unknown; max_input_tokens?: unknown }[]) {
      if (!m || typeof m.id !== 'string' || m.id.length === 0 || m.id.length > 200) continue;
      out.push({ id: m.id, maxOutputTokens: limit(m.max_tokens), maxInputTokens: limit(m.max_input_tokens) });
    }
    if (body.has_more !== true || typeof body.last_id !== 'string' || body.last_id === after) break;
    after = body.last_id;
  }
  return out;
}
