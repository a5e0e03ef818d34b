import type { RouteInfo } from './call.js';
import { modelsTried, type Prepared, type Tried } from './fallback.js';

/** `gateway_metadata`: how the call was routed (attempts, timing, endpoints considered). */
export function gatewayMetadata(info: RouteInfo) {
  const served = info.served;
  return {
    attempt: info.attempts,
    generation_time: Date.now() - info.startedAt,
    is_byok: served.credential.isByok,
    region: served.provider.region,
    requested: info.requested,
    strategy: info.strategy,
    summary:
      `${info.model.id} served by ${served.endpoint.provider}` +
      (info.attempts > 1 ? ` after ${info.attempts - 1} failed attempt(s)` : '') +
      (info.model.id !== info.primaryModel ? ` in place of ${info.primaryModel}` : '') +
      (info.excluded.length
        ? `; excluded: ${info.excluded.map((e) => `${e.provider} (${e.reason})`).join(', ')}`
        : ''),
    endpoints: { total: info.considered.length, available: info.considered },
    dropped_fields: info.dropped,
    // The model list (`models`, configured fallbacks): which models were tried, which were passed over.
    models_tried: info.modelsTried,
    ...(info.skippedModels.length ? { models_skipped: info.skippedModels } : {}),
    // An unlisted model with no known price, served at cost 0 (GATEHOUSE_UNPRICED_MODELS=allow).
    ...(info.model.priced === false ? { pricing_unknown: true } : {}),
  };
}

/**
 * The routing story a served generation keeps (GET /generation's `gateway_metadata`): what the
 * caller's answer carried, without its timing (the row has it), plus the route taken (a
 * pass-through lane or a translation) and the endpoints left out with why. The attempts
 * themselves are the row's `provider_responses`.
 */
export function storedMetadata(info: RouteInfo): string {
  const { generation_time: _, ...meta } = gatewayMetadata(info);
  return JSON.stringify({
    route: info.lane ? 'lane' : 'translated',
    ...meta,
    ...(info.excluded.length ? { endpoints_excluded: info.excluded } : {}),
  });
}

/**
 * The routing story of a call that no endpoint served, or that was cancelled before an answer:
 * what was planned and tried. `served`: the endpoint the cancelled attempt was made on.
 */
export function plannedMetadata(
  call: { model: string },
  prep: Pick<Prepared, 'models' | 'skippedModels' | 'excluded' | 'strategy' | 'primaryModel'>,
  tried: readonly Tried[],
  served?: { model: string; provider: string },
): string {
  const considered = prep.models.flatMap((m) =>
    m.endpoints.map((e) => ({
      model: m.id,
      provider: e.provider,
      selected: served !== undefined && m.id === served.model && e.provider === served.provider,
    })),
  );
  return JSON.stringify({
    // No answer came: which way it would have gone is not known here.
    route: null,
    attempt: tried.length,
    requested: call.model,
    strategy: prep.strategy,
    summary:
      served === undefined
        ? `no endpoint served ${prep.primaryModel} after ${tried.length} attempt(s)`
        : `cancelled by the caller while ${served.provider} worked on ${served.model}`,
    endpoints: { total: considered.length, available: considered },
    models_tried: modelsTried(tried),
    ...(prep.skippedModels.length ? { models_skipped: prep.skippedModels } : {}),
    ...(prep.excluded.length ? { endpoints_excluded: prep.excluded } : {}),
  });
}
