import type { ChatChunk, ChatResponse, Usage } from '../formats/chat.js';
import type { ResponsesCost } from '../formats/responses.js';
import { setMembers } from '../lib/json-splice.js';
import { extended } from '../lib/objects.js';
import type { RouteInfo } from '../routing/call.js';
import { gatewayMetadata } from '../routing/gateway-metadata.js';
import type { Cost } from '../routing/pricing.js';

export { gatewayMetadata };

/**
 * What a call charged to credits and what its BYOK provider charged: a BYOK call costs no credits
 * (`cost: 0`), its price is the provider's (`upstream_inference_cost`, null for other calls).
 */
export const charged = (cost: Cost, isByok: boolean) => ({
  cost: isByok ? 0 : cost.total,
  is_byok: isByok,
  upstream_inference_cost: isByok ? cost.total : null,
});

/** The full usage object of a chat body: token details, cost and cost details, BYOK flag. */
export function fullUsage(usage: Usage, cost: Cost, isByok: boolean) {
  const c = charged(cost, isByok);
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
    prompt_tokens_details: {
      cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
      cache_write_tokens: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
      audio_tokens: usage.prompt_tokens_details?.audio_tokens ?? 0,
    },
    completion_tokens_details: {
      reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
      audio_tokens: usage.completion_tokens_details?.audio_tokens ?? 0,
      image_tokens: 0,
    },
    cost: c.cost,
    is_byok: c.is_byok,
    cost_details: {
      upstream_inference_cost: c.upstream_inference_cost,
      upstream_inference_prompt_cost: cost.prompt,
      upstream_inference_completions_cost: cost.completion,
    },
  };
}

/**
 * A relayed JSON answer (a lane's) as text, with what OpenRouter's format adds to it: the provider
 * that served, the cost in its `usage`, and `extra` members (each set or appended as by
 * `{ ...answer, ...members }`); nothing else of the provider's is changed or lost, and the rest of
 * its text is kept as written. The body as received when it is not a JSON object.
 */
export function withProviderAndCost(
  done: {
    forwarded: { text: string; json: unknown };
    info: RouteInfo;
    usage: Usage;
    cost: Cost;
  },
  extra: Record<string, unknown> = {},
): string {
  const { json, text } = done.forwarded;
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return text;
  const prior = (json as { usage?: unknown }).usage;
  const members: Record<string, unknown> = {
    provider: done.info.served.endpoint.provider,
    usage: extended(
      typeof prior === 'object' && prior !== null && !Array.isArray(prior) ? prior : {},
      fullUsage(done.usage, done.cost, done.info.served.credential.isByok),
    ),
    ...extra,
  };
  const texts: Record<string, string> = {};
  for (const key in members) {
    // A member JSON leaves out (undefined) is left out here too: the whole answer is then
    // serialized, which drops it where the provider's answer had it.
    if (members[key] === undefined) continue;
    texts[key] = JSON.stringify(members[key]);
  }
  const spliced = Object.keys(texts).length === Object.keys(members).length ? setMembers(text, texts) : null;
  return spliced ?? JSON.stringify({ ...json, ...members });
}

/** The cost fields of a Responses `usage`: what was charged to credits, and the BYOK provider's cost. */
export function responsesCost(cost: Cost, isByok: boolean): ResponsesCost {
  const c = charged(cost, isByok);
  return {
    cost: c.cost,
    is_byok: c.is_byok,
    cost_details: {
      upstream_inference_cost: c.upstream_inference_cost,
      upstream_inference_input_cost: cost.prompt,
      upstream_inference_output_cost: cost.completion,
    },
  };
}

/** The response header listing what translation dropped (comma-separated field paths). */
export const DROPPED_FIELDS_HEADER = 'x-gatehouse-dropped-fields';

/**
 * `message.reasoning_details` only when the provider gave some (the seed's response body); the
 * web searches the provider ran are internal (a chat answer shows their citations, `annotations`).
 */
function withoutEmptyDetails(choices: ChatResponse['choices']): ChatResponse['choices'] {
  return choices.map((c) => {
    if (!c.message) return c;
    const { web_search_calls: _searches, ...rest } = c.message;
    if (rest.reasoning_details === undefined || rest.reasoning_details.length)
      return _searches ? { ...c, message: rest } : c;
    const { reasoning_details: _, ...message } = rest;
    return { ...c, message };
  });
}

/** A chunk's choices without the internal web searches (see withoutEmptyDetails). */
function withoutSearches(choices: ChatChunk['choices']): ChatChunk['choices'] {
  if (!choices.some((c) => c.delta?.web_search_calls)) return choices;
  return choices.map((c) => {
    const { web_search_calls: _, ...delta } = c.delta;
    return { ...c, delta };
  });
}

/**
 * A non-streaming chat completion as the caller sees it. The message keeps `reasoning` (the joined
 * text) and, when the provider returned any, `reasoning_details` (its reasoning state, signatures
 * included, to be sent back with the message in a later turn). `system_fingerprint` is the
 * upstream's, or null: the OpenRouter client requires the field.
 */
export function decorateChatResponse(
  res: ChatResponse,
  info: RouteInfo,
  usage: Usage,
  cost: Cost,
  echoUpstream: boolean,
) {
  const { provider_safeguards: upstreamSafeguards, ...answer } = res;
  return extended(answer, {
    system_fingerprint: res.system_fingerprint ?? null,
    choices: withoutEmptyDetails(res.choices),
    id: info.generationId,
    model: info.model.id,
    provider: info.served.endpoint.provider,
    usage: fullUsage(usage, cost, info.served.credential.isByok),
    gateway_metadata: gatewayMetadata(info),
    // The gateway's own filters, then the provider's (Azure's content filters) when it sent any.
    safeguard_results: upstreamSafeguards ? [...info.safeguards, ...upstreamSafeguards] : info.safeguards,
    ...(echoUpstream ? { debug: { echo_upstream_body: info.upstreamRequest } } : {}),
  });
}

/**
 * A streamed chunk as the caller sees it: the generation id and the catalog model id. Deltas pass
 * through as the provider adapter made them, `reasoning_details` fragments included; the early
 * prompt count (`prompt_usage`, internal) does not: Chat Completions reports usage at the end.
 */
export const decorateChunk = (
  { prompt_usage: _, provider_safeguards: safeguards, ...chunk }: ChatChunk,
  info: RouteInfo,
) =>
  extended(chunk, {
    choices: withoutSearches(chunk.choices),
    id: info.generationId,
    model: info.model.id,
    provider: info.served.endpoint.provider,
    // A chunk carrying the provider's filter verdicts (Azure) reports them as it comes.
    ...(safeguards ? { safeguard_results: safeguards } : {}),
  });
