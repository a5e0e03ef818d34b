/**
 * The gateway's side of the client image and video APIs: `/api/v1/images…` and `/api/v1/videos…`
 * forwarded to the media service, so a client with the gateway's base URL (`@openrouter/sdk`'s
 * `images.*` and `videoGeneration.*`, the `openai` client's `images.generate`, the AI SDK's image
 * and video models) reaches generation without a second base URL. The request body is streamed as it came; the media service authenticates the key, admits,
 * bills and answers, and its answer (JSON or SSE) is streamed back. Imports nothing of the media
 * service itself (its modules load only where it runs).
 */

import type { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { request } from 'undici';
import { sendError } from '../server/errors.js';
import { publicOrigin } from '../server/public-base.js';
import {
  ImageAnswer,
  ImageEndpoints,
  ImageModels,
  ImageRequest,
  OpenAiImageAnswer,
  OpenAiImageRequest,
  VideoJob,
  VideoModels,
  VideoRequest,
} from './apis/schemas.js';

/** Where the gateway reaches the media service: `GATEHOUSE_MEDIA_URL`, or the one `serve` runs beside it. */
export interface MediaLink {
  url: string | null;
}

/** The header the media service reads the gateway's API base from (apis/video-routes.ts). */
const BASE_URL_HEADER = 'x-gatehouse-base-url';

/** Request headers the media service reads; the caller's other headers stay here. */
const REQUEST_HEADERS = ['authorization', 'content-type', 'content-length', 'accept', 'user-agent'];
/** Answer headers relayed to the caller. */
const ANSWER_HEADERS = [
  'content-type',
  'content-length',
  'cache-control',
  'retry-after',
  'x-gatehouse-dropped-fields',
];

/** Routes under the API prefix, in a scope of their own: bodies are not parsed, only forwarded. */
export async function mediaForwardRoutes(
  scope: FastifyInstance,
  link: MediaLink,
  /** GATEHOUSE_PUBLIC_URL: the gateway's base as clients reach it, when set. */
  publicUrl: string | null,
): Promise<void> {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  // Generating takes an API key (checked here as on every inference route, and again by the media
  // service, which admits and bills it); the catalog is public, as the model list is.
  const tags = ['Media'];
  const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, Type.Ref('ErrorBody')]));
  scope.post(
    '/images',
    {
      config: {
        auth: 'api',
        openapi: {
          body: ImageRequest,
          response: { 200: ImageAnswer, ...errors(400, 401, 402, 403, 404, 429, 502) },
        },
      },
      schema: {
        tags,
        summary: 'Generate images',
        description:
          "OpenRouter's image API, served by the media service. The model is `media/<route name>`: its text-to-image route, or its image-to-image one when `input_references` are given. Fields the route has no equivalent for are listed in `x-gatehouse-dropped-fields`.",
      },
    },
    forward,
  );
  scope.post(
    '/images/generations',
    {
      config: {
        auth: 'api',
        openapi: {
          body: OpenAiImageRequest,
          response: { 200: OpenAiImageAnswer, ...errors(400, 401, 402, 403, 404, 429, 502) },
        },
      },
      schema: {
        tags,
        summary: 'Generate images (OpenAI Images API)',
        description:
          'OpenAI\'s Images API (`images.generate` of the openai client), served by the media service as `POST /images` is. `response_format: "url"` answers the stored images\' URLs.',
      },
    },
    forward,
  );
  scope.post(
    '/images/edits',
    {
      config: {
        auth: 'api',
        openapi: { response: { 200: OpenAiImageAnswer, ...errors(400, 401, 402, 403, 404, 429, 502) } },
      },
      schema: {
        tags,
        summary: 'Edit images (OpenAI Images API)',
        description:
          "OpenAI's image edits (`images.edit` of the openai client): a multipart form with the input images as `image` (or `image[]`) files and the fields of `POST /images/generations`, or a JSON body whose `images` are `{image_url}` objects. The model's image-to-image route makes the result.",
      },
    },
    forward,
  );
  scope.get(
    '/images/models',
    {
      config: { auth: 'none', openapi: { response: { 200: ImageModels } } },
      schema: { tags, summary: 'Image models' },
    },
    forward,
  );
  scope.get(
    '/images/models/:author/:slug/endpoints',
    {
      config: { auth: 'none', openapi: { response: { 200: ImageEndpoints, ...errors(404) } } },
      schema: { tags, summary: "An image model's endpoints" },
    },
    forward,
  );

  scope.post(
    '/videos',
    {
      config: {
        auth: 'api',
        openapi: {
          body: VideoRequest,
          response: { 202: VideoJob, ...errors(400, 401, 402, 403, 404, 429, 502) },
        },
      },
      schema: {
        tags,
        summary: 'Generate a video',
        description:
          "OpenRouter's video API, served by the media service: the job is accepted (202) and generated in the background; poll `polling_url`. The model is `media/<route name>` of a video route. Fields the route has no equivalent for are listed in `x-gatehouse-dropped-fields`.",
      },
    },
    forward,
  );
  scope.get(
    '/videos/models',
    {
      config: { auth: 'none', openapi: { response: { 200: VideoModels } } },
      schema: { tags, summary: 'Video models' },
    },
    forward,
  );
  scope.get(
    '/videos/:id',
    {
      config: { auth: 'api', openapi: { response: { 200: VideoJob, ...errors(401, 403, 404, 502) } } },
      schema: {
        tags,
        summary: 'A video job',
        description: "The job's status; its videos' URLs once completed.",
      },
    },
    forward,
  );
  scope.get(
    '/videos/:id/content',
    {
      config: {
        auth: 'api',
        openapi: {
          response: {
            200: {
              description: 'The video as stored (its content type: video/mp4, image/webp …)',
              content: { 'video/*': { schema: Type.String({ format: 'binary' }) } },
            },
            ...errors(401, 403, 404, 409, 502),
          },
        },
      },
      schema: {
        tags,
        summary: "A video job's video",
        description:
          'The finished video as stored (`index` picks one of several); 409 while the job is not completed.',
      },
    },
    forward,
  );

  async function forward(req: FastifyRequest, reply: FastifyReply) {
    if (!link.url)
      return sendError(
        reply,
        404,
        'Image and video generation are served by the media service, which this gateway does not reach: run it beside the gateway (GATEHOUSE_MEDIA=on) or set GATEHOUSE_MEDIA_URL',
      );
    if (req.caller?.isManagement)
      return sendError(reply, 403, 'Management keys cannot generate images or videos; use an API key');
    const headers: Record<string, string> = {};
    for (const name of REQUEST_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // A key sent as x-api-key (Anthropic-style clients) reaches the media service as the bearer it reads.
    const apiKey = req.headers['x-api-key'];
    if (!headers.authorization && req.caller && typeof apiKey === 'string')
      headers.authorization = `Bearer ${apiKey.trim()}`;
    // A video job's polling_url names this gateway, as its caller reached it.
    const route = req.routeOptions.url ?? '';
    headers[BASE_URL_HEADER] =
      `${publicOrigin(req, publicUrl)}${route.slice(0, route.search(/\/(images|videos)(\/|$)/))}`;
    // The caller leaving ends the generation it asked for.
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const answer = await request(`${link.url}${req.url}`, {
        method: req.method as 'GET' | 'POST',
        headers,
        body: req.method === 'POST' ? (req.body as Readable | undefined) : undefined,
        signal: gone.signal,
        // A generation takes as long as the media service's own deadline allows; it enforces it.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      reply.code(answer.statusCode);
      for (const name of ANSWER_HEADERS) {
        const value = answer.headers[name];
        if (typeof value === 'string') reply.header(name, value);
      }
      return reply.send(answer.body);
    } catch (err) {
      if (gone.signal.aborted) return reply;
      req.log.warn({ err: { message: (err as Error).message } }, 'media service unreachable');
      return sendError(reply, 502, 'The media service did not answer; retry shortly');
    } finally {
      reply.raw.off('close', onClose);
    }
  }
}
