/**
 * Vertex AI's URLs: `{origin}/v1/projects/{project}/locations/{region}/publishers/{publisher}/
 * models/{model}:{method}`. The origin is regional (`https://{region}-aiplatform.googleapis.com`),
 * or `https://aiplatform.googleapis.com` for the `global` endpoint, unless the entry overrides it.
 */
import { joinUrl } from '../http.js';
import { type ProviderConfig, UpstreamError, type VertexPublisher } from '../types.js';

export const vertexOrigin = (region: string): string =>
  region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`;

/**
 * A model's method URL. Model ids are Vertex's (`gemini-2.5-pro`, `claude-sonnet-4@20250514`); a
 * caller-named id Vertex could not have is refused, so no id can climb out of its path.
 */
export function vertexModelUrl(
  config: ProviderConfig,
  publisher: VertexPublisher,
  model: string,
  method: string,
): string {
  const id = model.replace(/^(models|publishers\/[\w-]+\/models)\//, '');
  if (!/^[\w.@-]{1,128}$/.test(id) || /^\.+$/.test(id))
    throw new UpstreamError(400, `not a valid Vertex AI model id: ${JSON.stringify(id.slice(0, 80))}`, {
      retryable: false,
    });
  const v = config.vertex;
  const project = encodeURIComponent(v?.project ?? '');
  const region = encodeURIComponent(v?.region ?? '');
  return joinUrl(
    config.baseUrl,
    `v1/projects/${project}/locations/${region}/publishers/${publisher}/models/${id}:${method}`,
  );
}
