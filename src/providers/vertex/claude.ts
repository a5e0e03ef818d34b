/**
 * Claude on Vertex AI: the Anthropic adapter (`anthropic/`) — same Messages bodies, translation,
 * stream mapping and usage tap — posted to `…/publishers/anthropic/models/{model}:rawPredict`
 * (`:streamRawPredict` for streams) with a Bearer token. Vertex takes the model from the URL and
 * the API version from the body (`anthropic_version`), not from headers; `anthropic-beta` is sent
 * as a header as on Anthropic's API.
 */
import { AnthropicProvider } from '../anthropic/adapter.js';
import type { ErrorShape } from '../errors.js';
import type { CallContext } from '../types.js';
import { vertexClaudeErrors } from './errors.js';
import { bearerHeaders } from './gemini.js';
import { vertexModelUrl } from './urls.js';

/** The Messages API version Vertex AI serves Claude under. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

export class VertexClaude extends AnthropicProvider {
  protected override readonly errors: ErrorShape = vertexClaudeErrors;

  protected override target(
    _path: string,
    body: Record<string, unknown>,
    stream: boolean,
  ): { url: string; body: Record<string, unknown> } {
    const { model, anthropic_version: _, ...rest } = body;
    const url = vertexModelUrl(
      this.config,
      'anthropic',
      String(model ?? ''),
      stream ? 'streamRawPredict' : 'rawPredict',
    );
    return { url, body: { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest } };
  }

  /** The operator's and the caller's headers (betas of both), no anthropic-version, and the token. */
  protected override headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    const h = bearerHeaders(this.config.headers, ctx);
    for (const [name, value] of Object.entries(caller)) {
      if (name === 'anthropic-version') continue;
      h[name] = name === 'anthropic-beta' && h[name] ? `${h[name]},${value}` : value;
    }
    delete h['anthropic-version'];
    return h;
  }
}
