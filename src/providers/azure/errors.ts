/**
 * Azure OpenAI's error bodies: OpenAI's `{error: {message, code}}` plus Azure's own codes
 * (`content_filter`, `DeploymentNotFound`, …) and, for a content-filter refusal, `innererror`
 * with the filter results. Messages name what the caller needs: the filter categories that
 * fired, or the deployment that does not exist.
 */
import { type ErrorShape, nonEmpty, obj } from '../errors.js';
import { openAiErrors } from '../openai/errors.js';

/** The categories a content-filter result marks as filtered: `hate (high)`, `jailbreak`. */
export function filteredCategories(results: unknown): string[] {
  const out: string[] = [];
  for (const [category, v] of Object.entries(obj(results))) {
    const r = obj(v);
    if (r.filtered !== true && r.detected !== true) continue;
    const severity = nonEmpty(r.severity);
    out.push(severity && severity !== 'safe' ? `${category} (${severity})` : category);
  }
  return out;
}

/** The error shape of calls to one deployment (named in a DeploymentNotFound message). */
export function azureErrors(deployment: string | null): ErrorShape {
  return {
    message(body) {
      const err = obj(obj(body).error);
      const code = nonEmpty(err.code);
      const upstream = openAiErrors.message(body);
      if (code === 'content_filter') {
        const categories = filteredCategories(obj(err.innererror).content_filter_result);
        const which = categories.length ? `: ${categories.join(', ')}` : '';
        return `Azure content filter refused the prompt${which}${upstream ? ` (${upstream})` : ''}`;
      }
      if (code === 'DeploymentNotFound' && deployment)
        return `Azure deployment "${deployment}" was not found on this resource${upstream ? ` (${upstream})` : ''}`;
      return upstream;
    },
    // A deployment missing on this resource says nothing of the request: another resource (the
    // model's next provider) may have it.
    retryable(status, body) {
      return status === 404 && obj(obj(body).error).code === 'DeploymentNotFound' ? true : undefined;
    },
  };
}
