import { fromJsonList } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import type { Accountant, GenerationRow } from './accounting.js';

/** OpenRouter's `api_type` of a generation, by the endpoint that served it (media: by its kind). */
function apiType(
  r: GenerationRow,
): 'completions' | 'embeddings' | 'rerank' | 'tts' | 'stt' | 'image' | 'video' | null {
  if (['chat', 'completions', 'messages', 'responses'].includes(r.endpoint)) return 'completions';
  if (r.endpoint === 'embeddings') return 'embeddings';
  if (r.endpoint === 'rerank') return 'rerank';
  if (r.endpoint === 'speech') return 'tts';
  if (r.endpoint === 'transcription') return 'stt';
  if (r.endpoint === 'media') return r.requested_model.startsWith('media/video/') ? 'video' : 'image';
  return null;
}

/**
 * The wire form of one recorded generation (GET /generation?id=): every field the official
 * OpenRouter client validates, null where Gatehouse records nothing of the kind (app, referer,
 * moderation, web search, presets), and Gatehouse's own fields after them.
 * `origin` is the endpoint that served the call; native token counts are the recorded ones.
 */
export function generationView(r: GenerationRow) {
  const isByok = r.is_byok === 1;
  return {
    id: r.id,
    created_at: r.created_at,
    model: r.model ?? r.requested_model,
    requested_model: r.requested_model,
    provider_name: r.provider,
    upstream_model: r.upstream_model,
    origin: r.endpoint,
    api_type: apiType(r),
    status: r.status,
    http_status: r.http_status,
    streamed: r.streamed === 1,
    cancelled: r.status === 'cancelled',
    finish_reason: r.finish_reason,
    native_finish_reason: null,
    tokens_prompt: r.prompt_tokens,
    tokens_completion: r.completion_tokens,
    native_tokens_prompt: r.prompt_tokens,
    native_tokens_completion: r.completion_tokens,
    native_tokens_completion_images: null,
    native_tokens_reasoning: r.reasoning_tokens,
    native_tokens_cached: r.cached_tokens,
    native_tokens_cache_write: r.cache_write_tokens,
    num_media_prompt: null,
    num_media_completion: null,
    num_input_audio_prompt: null,
    num_search_results: null,
    num_fetches: null,
    usage_estimated: r.usage_estimated === 1,
    pricing_unknown: r.pricing_unknown === 1,
    total_cost: r.cost_usd,
    usage: r.cost_usd,
    cache_discount: null,
    upstream_inference_cost: isByok ? r.cost_usd : null,
    cost_details: { prompt: r.prompt_cost_usd, completion: r.completion_cost_usd },
    is_byok: isByok,
    attempts: r.attempts,
    latency: r.latency_ms,
    generation_time: r.generation_time_ms,
    moderation_latency: null,
    data_region: 'global',
    service_tier: null,
    router: null,
    // Every attempt: the model and provider tried, the upstream's status (200: the one that served).
    provider_responses: fromJsonList(r.provider_responses),
    upstream_id: r.upstream_id,
    app_id: null,
    preset_id: r.preset_id ?? null,
    http_referer: null,
    user_agent: null,
    external_user: null,
    web_search_engine: null,
    api_key_hash: r.key_hash,
    user_id: r.user_id,
    workspace_id: r.workspace_id,
    error_message: r.error_message,
    passthrough: r.passthrough === 1,
    web_search_requests: r.web_search_requests,
  };
}

/**
 * One generation as GET /generation shows it: the list's fields, then what the call kept of its
 * checks (`safeguards`) and its routing (`gateway_metadata`); null on rows from before they were
 * kept. The list (GET /generations) leaves both out: they are the bulk of a row.
 */
export function generationDetailView(r: GenerationRow) {
  return {
    ...generationView(r),
    safeguards: fromJsonList<Record<string, unknown>>(r.safeguards ?? null),
    gateway_metadata: r.gateway_metadata ? (JSON.parse(r.gateway_metadata) as Record<string, unknown>) : null,
  };
}

/** Reads generations: written ones from the database, queued ones from the accountant. */
export class GenerationsService {
  constructor(
    private readonly db: Db,
    private readonly accountant: Accountant,
  ) {}

  /** A generation by its id, or by the provider's id of the answer (what a pass-through caller saw). */
  async get(organizationId: string, id: string) {
    const row =
      this.accountant.pending(id) ??
      (await this.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst()) ??
      (await this.db
        .selectFrom('generations')
        .selectAll()
        .where('upstream_id', '=', id)
        .where('organization_id', '=', organizationId)
        .executeTakeFirst());
    if (!row || row.organization_id !== organizationId) return null;
    const view = generationDetailView(row);
    return { ...view, safeguards: view.safeguards && (await this.named(organizationId, view.safeguards)) };
  }

  /**
   * The safeguards with the current name of each filter's guardrail, read now (a renamed guardrail
   * shows its new name); `guardrail_name` null: the guardrail was deleted since.
   */
  private async named(organizationId: string, safeguards: Record<string, unknown>[]) {
    const ids = [
      ...new Set(safeguards.map((s) => s.guardrail_id).filter((id): id is string => typeof id === 'string')),
    ];
    if (ids.length === 0) return safeguards;
    const rows = await this.db
      .selectFrom('guardrails')
      .select(['id', 'name'])
      .where('organization_id', '=', organizationId)
      .where('id', 'in', ids)
      .execute();
    const names = new Map(rows.map((r) => [r.id, r.name]));
    return safeguards.map((s) =>
      typeof s.guardrail_id === 'string' ? { ...s, guardrail_name: names.get(s.guardrail_id) ?? null } : s,
    );
  }
}
