/**
 * OpenRouter's image and video APIs as the gateway's OpenAPI document shows them (documentation only: the media
 * service validates requests itself, and answers pass unfiltered).
 */

import { Type } from '@sinclair/typebox';

const Capability = Type.Object(
  { type: Type.String({ description: '`enum`, `range` or `boolean`' }) },
  { additionalProperties: true },
);

export const ImageRequest = Type.Object(
  {
    model: Type.String({ description: 'An image model: `media/<route name>`' }),
    prompt: Type.String({ minLength: 1 }),
    n: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10, description: 'Images to make (one generation each)' }),
    ),
    size: Type.Optional(
      Type.String({
        description:
          "A size tier the route takes (`1K`, `2K`), or `WxH` pixels (→ the route's tier and nearest aspect ratio)",
      }),
    ),
    resolution: Type.Optional(Type.String({ description: 'A size tier' })),
    aspect_ratio: Type.Optional(Type.String()),
    output_format: Type.Optional(Type.String()),
    input_references: Type.Optional(
      Type.Array(
        Type.Object({
          type: Type.Literal('image_url'),
          image_url: Type.Object({ url: Type.String({ description: 'An http(s) or base64 data: URL' }) }),
        }),
        { description: "Input images: the model's image-to-image route" },
      ),
    ),
    stream: Type.Optional(Type.Boolean({ description: 'Answer as server-sent events' })),
  },
  { additionalProperties: true },
);

export const ImageAnswer = Type.Object({
  created: Type.Integer(),
  data: Type.Array(Type.Object({ b64_json: Type.String(), media_type: Type.Optional(Type.String()) })),
  usage: Type.Optional(
    Type.Object({
      prompt_tokens: Type.Integer(),
      completion_tokens: Type.Integer(),
      total_tokens: Type.Integer(),
      cost: Type.Number({ description: 'USD charged' }),
    }),
  ),
});

export const ImageModels = Type.Object({
  data: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      created: Type.Integer(),
      description: Type.String(),
      endpoints: Type.String(),
      architecture: Type.Object({
        input_modalities: Type.Array(Type.String()),
        output_modalities: Type.Array(Type.String()),
      }),
      supported_parameters: Type.Record(Type.String(), Capability),
      supports_streaming: Type.Boolean(),
    }),
  ),
});

export const ImageEndpoints = Type.Object({
  id: Type.String(),
  endpoints: Type.Array(
    Type.Object({
      provider_name: Type.String(),
      provider_slug: Type.String(),
      provider_tag: Type.Union([Type.String(), Type.Null()]),
      allowed_passthrough_parameters: Type.Array(Type.String()),
      pricing: Type.Array(
        Type.Object({
          billable: Type.String(),
          unit: Type.String(),
          cost_usd: Type.Number(),
          variant: Type.Optional(Type.String()),
        }),
      ),
      supported_parameters: Type.Record(Type.String(), Capability),
      supports_streaming: Type.Boolean(),
    }),
  ),
});

export const OpenAiImageRequest = Type.Object(
  {
    model: Type.String({ description: 'An image model: `media/<route name>`' }),
    prompt: Type.String({ minLength: 1 }),
    n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    size: Type.Optional(Type.String({ description: '`auto`, `WxH` pixels, or a size tier the route takes' })),
    output_format: Type.Optional(Type.String()),
    response_format: Type.Optional(
      Type.Union([Type.Literal('b64_json'), Type.Literal('url')], {
        description: '`url`: the stored images’ URLs instead of their bytes (default `b64_json`)',
      }),
    ),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);

export const OpenAiImageAnswer = Type.Object({
  created: Type.Integer(),
  data: Type.Array(
    Type.Object({ b64_json: Type.Optional(Type.String()), url: Type.Optional(Type.String()) }),
  ),
  output_format: Type.Optional(Type.String()),
  usage: Type.Object({
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    total_tokens: Type.Integer(),
  }),
});

const ImageUrlPart = Type.Object({
  type: Type.Literal('image_url'),
  image_url: Type.Object({ url: Type.String({ description: 'An http(s) or base64 data: URL' }) }),
});

export const VideoRequest = Type.Object(
  {
    model: Type.String({ description: 'A video model: `media/<route name>`' }),
    prompt: Type.String({ minLength: 1 }),
    duration: Type.Optional(Type.Integer({ description: 'Seconds, as the route allows' })),
    resolution: Type.Optional(Type.String({ description: 'A resolution the route takes (`480p`, `720p`)' })),
    size: Type.Optional(Type.String({ description: '`WxH` pixels: the resolution of its short side' })),
    aspect_ratio: Type.Optional(Type.String()),
    frame_images: Type.Optional(
      Type.Array(Type.Intersect([ImageUrlPart, Type.Object({ frame_type: Type.Literal('first_frame') })]), {
        description: 'The first frame (a route with an `image` parameter)',
      }),
    ),
    input_references: Type.Optional(
      Type.Array(ImageUrlPart, { description: 'Reference images (a route with an image list)' }),
    ),
    callback_url: Type.Optional(
      Type.String({
        description: "An https:// URL: the job's end is POSTed there (a `video.generation.*` event)",
      }),
    ),
  },
  { additionalProperties: true },
);

export const VideoJob = Type.Object({
  id: Type.String({ description: '`gen-vid-<unix seconds>-<20 alphanumerics>`' }),
  polling_url: Type.String(),
  status: Type.Union(['pending', 'in_progress', 'completed', 'failed'].map((s) => Type.Literal(s))),
  unsigned_urls: Type.Optional(
    Type.Array(Type.String(), { description: 'The stored videos, once completed' }),
  ),
  usage: Type.Optional(
    Type.Object({ cost: Type.Number({ description: 'USD charged' }), is_byok: Type.Boolean() }),
  ),
  error: Type.Optional(Type.String()),
});

export const VideoModels = Type.Object({
  data: Type.Array(
    Type.Object(
      {
        id: Type.String(),
        name: Type.String(),
        canonical_slug: Type.String(),
        created: Type.Integer(),
        supported_durations: Type.Union([Type.Array(Type.Integer()), Type.Null()]),
        supported_resolutions: Type.Union([Type.Array(Type.String()), Type.Null()]),
        supported_aspect_ratios: Type.Union([Type.Array(Type.String()), Type.Null()]),
        supported_frame_images: Type.Union([Type.Array(Type.String()), Type.Null()]),
      },
      { additionalProperties: true },
    ),
  ),
});
