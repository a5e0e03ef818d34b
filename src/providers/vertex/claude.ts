/**
 * Claude on Vertex AI: the Anthropic adapter (`anthropic/`) — same Messages bodies, translation,
 * stream mapping and usage tap — posted to `…/publishers/anthropic/models/{model}:rawPredict`
 * (`:streamRawPredict` for streams) with a Bearer token. Vertex takes the model from the URL and
 * the API version from the body (`anthropic_version`); `anthropic-beta` is sent as a header as on
 * Anthropic's API. Token counting is `…/models/count-tokens:rawPredict`, the model in the body.
 */
import { AnthropicProvider } from '../anthropic/adapter.js';
import type { ErrorShape } from '../errors.js';
import type { CallContext } from '../types.js';
import { vertexClaudeErrors } from './errors.js';
import { bearerHeaders } from './headers.js';
import { vertexModelUrl } from './urls.js';

/** The Messages API version Vertex AI serves Claude under. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

export class VertexClaude extends AnthropicProvider {
  protected override readonly errors: ErrorShape = vertexClaudeErrors;

  protected override target(
    path: string,
    body: Record<string, unknown>,
    stream: boolean,
  ): { url: string; body: Record<string, unknown> } {
    const { model, anthropic_version: _, ...rest } = body;
    // Token counting has one endpoint for every model, which stays in the body.
    if (path === 'messages/count_tokens')
      return {
        url: vertexModelUrl(this.config, 'anthropic', 'count-tokens', 'rawPredict'),
        body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, model, ...rest },
      };
    const method = stream ? 'streamRawPredict' : 'rawPredict';
    const url = vertexModelUrl(this.config, 'anthropic', String(model ?? ''), method);
    return { url, body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest } };
  }

  /**
   * The operator's headers and the caller's (`anthropic-version` and `anthropic-beta`, as Vertex's
   * own clients send them; betas of both), and the token. No version header of Gatehouse's own:
   * the body's `anthropic_version` is the one Vertex reads.
   */
  protected override headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    const h = bearerHeaders(this.config.headers, ctx);
    for (const [name, value] of Object.entries(caller))
      h[name] = name === 'anthropic-beta' && h[name] ? `${h[name]},${value}` : value;
    return h;
  }
}
