/**
 * The configured media providers as generators, by slug (the service adds the built-in `local`).
 */

import type { MediaGenerator } from '../types.js';
import type { MediaProviderConfig } from './config.js';
import type { ProviderHttpOptions } from './http.js';
import { OpenAiImagesGenerator } from './openai-images.js';
import { TaskApiGenerator } from './task-api.js';

export type { MediaProviderConfig } from './config.js';
export { checkRouteProviders, loadProvidersFile, parseProviders } from './config.js';

export function providerGenerators(
  providers: readonly MediaProviderConfig[] = [],
  options: ProviderHttpOptions = {},
): Record<string, MediaGenerator> {
  const out: Record<string, MediaGenerator> = {};
  for (const p of providers)
    out[p.slug] =
      p.kind === 'openai-images' ? new OpenAiImagesGenerator(p, options) : new TaskApiGenerator(p, options);
  return out;
}
