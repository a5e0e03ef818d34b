/**
 * Claude on Vertex AI: the Anthropic adapter (`anthropic/`) — same Messages bodies, translation,
 * stream mapping and usage tap — posted to `…/publishers/anthropic/models/{model}:rawPredict`
 * (`:streamRawPredict` for streams) with a Bearer token. Vertex takes the model from the URL and
 * the API version from the body (`anthropic_version`); `anthropic-beta` is sent as a header as on
 * Anthropic's API, with only the caller's flags Vertex has (`anthropic/betas.ts`; the operator's
 * configured ones go as they are), and a body field whose beta Vertex lacks is left out. Token
 * counting is `…/models/count-tokens:rawPredict`, the model in the body.
 */
import { refuseThread } from '../../formats/threads.js';
import { sameSource } from '../../lib/raw-json.js';
import { AnthropicProvider } from '../anthropic/adapter.js';
import { betaList, hostBetas, ungatedFields } from '../anthropic/betas.js';
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
    for (const field of ungatedFields(body, 'vertex')) delete rest[field];
    // Token counting has one endpoint for every model, which stays in the body.
    if (path === 'messages/count_tokens')
      return {
        url: vertexModelUrl(this.config, 'anthropic', 'count-tokens', 'rawPredict'),
        body: sameSource({ anthropic_version: VERTEX_ANTHROPIC_VERSION, model, ...rest }, body),
      };
    refuseThread(body, 'Google Vertex AI');
    const method = stream ? 'streamRawPredict' : 'rawPredict';
    const url = vertexModelUrl(this.config, 'anthropic', String(model ?? ''), method);
    // A lane's large body keeps the caller's bytes for its unchanged members (lib/raw-json.ts).
    return { url, body: sameSource({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest }, body) };
  }

  /**
   * The operator's headers and the caller's (`anthropic-version` and `anthropic-beta`, as Vertex's
   * own clients send them; the operator's betas and the caller's Vertex has), and the token. No
   * version header of Gatehouse's own: the body's `anthropic_version` is the one Vertex reads.
   */
  protected override headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    const h = bearerHeaders(this.config.headers, ctx);
    for (const [name, raw] of Object.entries(caller)) {
      const value = name === 'anthropic-beta' ? hostBetas(betaList(raw), 'vertex').kept.join(',') : raw;
      if (!value) continue;
      h[name] = name === 'anthropic-beta' && h[name] ? `${h[name]},${value}` : value;
    }
    return h;
  }
}

/** What a Vertex lane leaves out of a caller's Messages call: betas Vertex has no flag for, their fields. */
export function droppedVertexFields(
  body: Record<string, unknown>,
  headers: Record<string, string>,
): string[] {
  return [
    ...hostBetas(betaList(headers['anthropic-beta']), 'vertex').dropped.map((b) => `anthropic-beta:${b}`),
    ...ungatedFields(body, 'vertex'),
  ];
}
