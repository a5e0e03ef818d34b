/**
 * The media routes as OpenRouter's image catalog (`GET /api/v1/images/models` and a model's
 * endpoints): one model per route name with a text-to-image or image-to-image route, its
 * parameters as capability descriptors, its price per output image.
 */

import { type MediaRoute, type ParamSpec, providerSlugOf } from '../types.js';
import { imageModelId, imageRoutes, MAX_IMAGES, MEDIA_AUTHOR } from './images.js';

type Capability =
  | { type: 'enum'; values: string[] }
  | { type: 'range'; min: number; max: number }
  | { type: 'boolean' };

/** A parameter as OpenRouter describes one; image inputs and free strings have no descriptor. */
function capability(spec: ParamSpec): Capability | null {
  switch (spec.type) {
    case 'string':
      return spec.enum ? { type: 'enum', values: spec.enum } : null;
    case 'integer':
      if (spec.enum) return { type: 'enum', values: spec.enum.map(String) };
      return spec.min !== undefined && spec.max !== undefined
        ? { type: 'range', min: spec.min, max: spec.max }
        : null;
    case 'boolean':
      return { type: 'boolean' };
    default:
      return null;
  }
}

function supportedParameters(routes: MediaRoute[]): Record<string, Capability> {
  const out: Record<string, Capability> = { n: { type: 'range', min: 1, max: MAX_IMAGES } };
  for (const route of routes)
    for (const [name, spec] of Object.entries(route.params)) {
      const c = capability(spec);
      if (c && !out[name]) out[name] = c;
    }
  return out;
}

/** Image model names, in the order their first route is configured. */
function imageModelNames(routes: MediaRoute[]): string[] {
  return [...new Set(routes.filter((r) => r.kind === 't2i' || r.kind === 'i2i').map((r) => r.name))];
}

export function imageModels(routes: MediaRoute[], basePath: string, created: number) {
  return {
    data: imageModelNames(routes).map((name) => {
      const { t2i, i2i } = imageRoutes(routes, name);
      const own = [t2i, i2i].filter((r): r is MediaRoute => r !== undefined);
      return {
        id: imageModelId(name),
        name,
        created,
        description:
          own.map((r) => r.description).find(Boolean) ??
          `${[t2i && 'text-to-image', i2i && 'image-to-image'].filter(Boolean).join(' and ')} (${own.map((r) => r.providerModel).join(', ')})`,
        endpoints: `${basePath}/images/models/${imageModelId(name)}/endpoints`,
        architecture: {
          input_modalities: i2i ? ['text', 'image'] : ['text'],
          output_modalities: ['image'],
        },
        supported_parameters: supportedParameters(own),
        supports_streaming: true,
      };
    }),
  };
}

/** A model's endpoints (one per provider serving it), or null when there is no such image model. */
export function imageModelEndpoints(routes: MediaRoute[], author: string, slug: string) {
  const { t2i, i2i } = author === MEDIA_AUTHOR ? imageRoutes(routes, slug) : {};
  const own = [t2i, i2i].filter((r): r is MediaRoute => r !== undefined);
  if (own.length === 0) return null;
  const providers = [...new Set(own.map(providerSlugOf))];
  return {
    id: imageModelId(slug),
    endpoints: providers.map((slug) => {
      const served = own.filter((r) => providerSlugOf(r) === slug);
      return {
        provider_name: slug === 'gatehouse' ? 'Gatehouse (built-in generator)' : slug,
        provider_slug: slug,
        provider_tag: null,
        allowed_passthrough_parameters: [],
        pricing: served.map((r) => ({
          billable: 'output_image',
          unit: 'image',
          cost_usd: r.priceUsd ?? 0,
          variant: r.kind === 't2i' ? 'text-to-image' : 'image-to-image',
        })),
        supported_parameters: supportedParameters(served),
        supports_streaming: true,
      };
    }),
  };
}
