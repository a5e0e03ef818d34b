/**
 * The media service's HTTP routes: one `POST /api/<kind>/<name>` per configured route (each
 * registered with its own schema, so the OpenAPI document lists its parameters, enums and
 * defaults), a 404 for unknown models, `GET /files/*` for the filesystem store, `/health` and
 * `/api/status`. Handlers are thin: read the body (JSON, or multipart streamed to temp files),
 * validate, fetch image URLs, generate, answer.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TempFiles } from '../lib/temp-files.js';
import type { MediaConfig } from './config.js';
import { PROMPT_MAX_LENGTH } from './config.js';
import { fetchImages } from './fetch.js';
import type { AdmittedRequest, MediaService } from './service.js';
import type { FilesystemStore } from './storage/filesystem.js';
import { type InputImage, MediaError, type MediaRoute, type ParamSpec } from './types.js';
import { readMultipart } from './uploads.js';
import { validateGeneration } from './validate.js';

const ErrorBody = {
  type: 'object',
  required: ['success', 'message', 'error'],
  properties: {
    success: { type: 'boolean', const: false },
    message: { type: 'string' },
    error: {
      type: 'object',
      required: ['code'],
      properties: {
        code: {
          type: 'string',
          description:
            "not_found, unknown_parameter, invalid_type, invalid_value, missing_parameter, invalid_image, file_too_large, url_not_allowed, image_fetch_failed, invalid_body, invalid_url, invalid_request, request_timeout, headers_too_large, payload_too_large, unsupported_media_type, unauthorized, forbidden (a management key, the key's limits or budgets, or its guardrail's model and provider lists), content_blocked (a content filter), insufficient_credits, rate_limited, queue_full, storage_full, database_unavailable, generation_timeout, internal_error, or a provider code",
        },
        field: { type: 'string', description: 'The request field the error concerns' },
      },
    },
  },
} as const;

const SuccessBody = {
  type: 'object',
  required: ['success', 'message', 'data'],
  properties: {
    success: { type: 'boolean', const: true },
    message: { type: 'string' },
    data: {
      type: 'object',
      required: ['model', 'outputs'],
      properties: {
        model: { type: 'string' },
        outputs: {
          type: 'array',
          items: {
            type: 'object',
            required: ['url', 'key'],
            properties: {
              url: { type: 'string', description: 'Where the output can be fetched' },
              key: { type: 'string', description: 'Its object-store key' },
            },
          },
        },
      },
    },
  },
} as const;

/** A parameter's JSON Schema, for the OpenAPI document (validation is validate.ts's). */
export function paramSchema(name: string, spec: ParamSpec): Record<string, unknown> {
  switch (spec.type) {
    case 'string':
      return {
        type: 'string',
        ...(spec.enum ? { enum: spec.enum } : {}),
        ...(spec.default !== undefined ? { default: spec.default } : {}),
        ...(spec.maxLength !== undefined ? { maxLength: spec.maxLength } : {}),
      };
    case 'integer':
      return {
        type: 'integer',
        ...(spec.enum ? { enum: spec.enum } : {}),
        ...(spec.default !== undefined ? { default: spec.default } : {}),
        ...(spec.min !== undefined ? { minimum: spec.min } : {}),
        ...(spec.max !== undefined ? { maximum: spec.max } : {}),
      };
    case 'boolean':
      return { type: 'boolean', ...(spec.default !== undefined ? { default: spec.default } : {}) };
    case 'image_urls':
      return {
        type: 'array',
        items: { type: 'string', format: 'uri' },
        ...(spec.minItems !== undefined ? { minItems: spec.minItems } : {}),
        ...(spec.maxItems !== undefined ? { maxItems: spec.maxItems } : {}),
        description: `http(s) image URLs (PNG, JPEG, WebP or GIF). In multipart/form-data: repeated ${name} fields or one JSON array.`,
      };
    case 'image':
      return {
        type: 'string',
        description: `An http(s) image URL; in multipart/form-data, a file part named ${name} (PNG, JPEG, WebP or GIF) may be sent instead.`,
      };
  }
}

export function routeBodySchema(route: MediaRoute): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    prompt: { type: 'string', minLength: 1, maxLength: PROMPT_MAX_LENGTH, description: 'What to generate' },
  };
  const required = ['prompt'];
  for (const [name, spec] of Object.entries(route.params)) {
    properties[name] = paramSchema(name, spec);
    if (spec.required) required.push(name);
  }
  return { type: 'object', required, properties, additionalProperties: false };
}

export interface RouteDeps {
  config: MediaConfig;
  service: MediaService;
  /** Set when outputs are kept on local disk and served under /files. */
  files: FilesystemStore | null;
}

/** Input images as the generator gets them: grouped by parameter in the route's order, request order within. */
function byParamOrder(route: MediaRoute, images: InputImage[]): InputImage[] {
  const order = Object.keys(route.params);
  return images
    .map((image, i) => ({ image, i }))
    .sort((a, b) => order.indexOf(a.image.param) - order.indexOf(b.image.param) || a.i - b.i)
    .map((x) => x.image);
}

export async function mediaRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const { config, service } = deps;

  for (const route of deps.config.routes) {
    const path = `/api/${route.kind}/${route.name}`;
    app.post(
      path,
      {
        // The schema documents the route; validate.ts checks requests (one error shape for JSON and forms).
        validatorCompiler: () => () => true,
        schema: {
          summary: `${route.kind} ${route.name}`,
          // Which provider serves the route is part of its contract (latency, data policy, price).
          description:
            `${route.description ?? ''} Served by provider \`${route.provider}\`, model \`${route.providerModel}\`.`.trim(),
          'x-gatehouse-provider': { slug: route.provider, model: route.providerModel },
          tags: [route.kind],
          operationId: `${route.kind}_${route.name}`.replace(/[^A-Za-z0-9_]/g, '_'),
          consumes: ['application/json', 'multipart/form-data'],
          body: routeBodySchema(route),
          response: { 200: SuccessBody, '4xx': ErrorBody, '5xx': ErrorBody },
        },
      },
      (req, reply) => generate(route, req, reply),
    );
  }

  app.post('/api/:kind/:model', { schema: { hide: true } }, async (req) => {
    const { kind, model } = req.params as { kind: string; model: string };
    throw new MediaError(404, 'not_found', `There is no ${kind} model named ${model}`, 'model');
  });

  async function generate(route: MediaRoute, req: FastifyRequest, reply: FastifyReply) {
    const temp = new TempFiles('media');
    const cancel = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) cancel.abort(new Error('client went away'));
    };
    reply.raw.once('close', onClose);
    let valid: AdmittedRequest | null = null;
    try {
      let input: Record<string, unknown> = {};
      let uploads: InputImage[] = [];
      const form = req.isMultipart();
      if (form) {
        const body = await readMultipart(req, route, temp, {
          maxUploadBytes: config.maxUploadBytes,
          fieldBytes: Math.min(config.bodyLimit, 256 * 1024),
        });
        input = body.fields;
        uploads = body.files;
      } else if (req.body !== undefined && req.body !== null) {
        if (typeof req.body !== 'object' || Array.isArray(req.body))
          throw new MediaError(400, 'invalid_body', 'The body must be a JSON object');
        input = req.body as Record<string, unknown>;
      }
      valid = await service.admit(
        route,
        validateGeneration(route, input, { form, files: uploads.map((f) => f.param) }),
        req.mediaCaller,
      );

      const images = [...uploads, ...(await fetchImages(valid.imageUrls, temp, config, cancel.signal))];

      const outputs = await service.generate(
        route,
        valid,
        byParamOrder(route, images),
        cancel.signal,
        req.mediaCaller,
      );
      const noun = route.kind === 'video' ? 'video' : 'image';
      // Returned (not sent here), so the temp files are gone before the client has its answer.
      return {
        success: true,
        message: `Generated ${outputs.length} ${noun}${outputs.length === 1 ? '' : 's'}`,
        data: { model: route.name, outputs: outputs.map(({ url, key }) => ({ url, key })) },
      };
    } finally {
      // Refused or failed before generating (an image URL that could not be fetched): nothing spent.
      valid?.hold?.release();
      reply.raw.off('close', onClose);
      await temp.cleanup();
    }
  }

  const Status = {
    type: 'object',
    properties: {
      status: { type: 'string' },
      median_generation_ms: { type: ['integer', 'null'] },
      generations: { type: 'integer' },
      running: { type: 'integer', description: 'Generations running now' },
      queued: { type: 'integer', description: 'Generations waiting for a slot' },
    },
  } as const;
  app.get(
    '/health',
    {
      schema: {
        summary: 'Liveness',
        response: { 200: { type: 'object', properties: { status: { type: 'string' } } } },
      },
    },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/api/status',
    {
      schema: {
        summary: 'Status and the median time of the last 100 generations',
        response: { 200: Status },
      },
    },
    async () => service.status(),
  );

  const store = deps.files;
  if (store) {
    app.get('/files/*', { schema: { hide: true } }, async (req, reply) => {
      const key = (req.params as { '*': string })['*'];
      const file = await store.open(key);
      if (!file) throw new MediaError(404, 'not_found', 'No such file', 'key');
      reply
        .header('content-type', file.contentType)
        .header('content-length', String(file.size))
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('etag', file.etag)
        .header('x-content-type-options', 'nosniff');
      const match = req.headers['if-none-match'];
      if (match?.split(',').some((t) => t.trim() === file.etag)) {
        file.stream.destroy();
        reply.removeHeader('content-length');
        return reply.code(304).send();
      }
      return reply.send(file.stream);
    });
  }
}
