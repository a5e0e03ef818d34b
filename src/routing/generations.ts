import type { Db } from '../db/connection.js';
import type { Accountant, GenerationRow } from './accounting.js';

/** The wire form of one recorded generation (GET /generation?id=). */
export function generationView(r: GenerationRow) {
  return {
    id: r.id,
    created_at: r.created_at,
    model: r.model ?? r.requested_model,
    requested_model: r.requested_model,
    provider_name: r.provider,
    upstream_model: r.upstream_model,
    origin: r.endpoint,
    status: r.status,
    http_status: r.http_status,
    streamed: r.streamed === 1,
    cancelled: r.status === 'cancelled',
    finish_reason: r.finish_reason,
    tokens_prompt: r.prompt_tokens,
    tokens_completion: r.completion_tokens,
    native_tokens_reasoning: r.reasoning_tokens,
    native_tokens_cached: r.cached_tokens,
    native_tokens_cache_write: r.cache_write_tokens,
    usage_estimated: r.usage_estimated === 1,
    pricing_unknown: r.pricing_unknown === 1,
    total_cost: r.cost_usd,
    usage: r.cost_usd,
    cost_details: { prompt: r.prompt_cost_usd, completion: r.completion_cost_usd },
    is_byok: r.is_byok === 1,
    attempts: r.attempts,
    latency: r.latency_ms,
    generation_time: r.generation_time_ms,
    api_key_hash: r.key_hash,
    user_id: r.user_id,
    workspace_id: r.workspace_id,
    error_message: r.error_message,
  };
}

/** Reads generations: written ones from the database, queued ones from the accountant. */
export class GenerationsService {
  constructor(
    private readonly db: Db,
    private readonly accountant: Accountant,
  ) {}

  async get(organizationId: string, id: string) {
    const row =
      this.accountant.pending(id) ??
      (await this.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst());
    return row && row.organization_id === organizationId ? generationView(row) : null;
  }
}
