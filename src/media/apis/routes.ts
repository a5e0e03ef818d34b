/**
 * The image APIs clients already speak, on the media service: OpenRouter's (`POST /api/v1/images`,
 * JSON or SSE with `stream`, and its catalog `GET /api/v1/images/models` and a model's endpoints)
 * and OpenAI's (`POST /api/v1/images/generations` and `/images/edits`). The gateway forwards the
 * same paths here, so clients generate images with the gateway's base URL. A call runs the media
 * routes (images.ts), admitted, queued, billed and stored as theirs are; errors are OpenRouter's
 * envelope.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isObj } from '../../formats/validate.js';
import { TempFiles } from '../../lib/temp-files.js';
import type { MediaConfig } from '../config.js';
import { fetchImages } from '../fetch.js';
import type { MediaService, StoredOutput } from '../service.js';
import { type InputImage, MASK_PARAM, MediaError, type MediaRoute } from '../types.js';
import { type ValidatedRequest, validateGeneration } from '../validate.js';
import { imageModelEndpoints, imageModels } from './catalog.js';
import { readEditForm } from './edit-form.js';
import { type ImageCall, imageCall, openAiEditCall, openAiImageCall } from './images.js';

/** Routes under it answer errors in OpenRouter's envelope (server.ts), which OpenAI's clients read too. */
export const API_PREFIX = '/api/v1/';

/** Input images may come inline as base64 data: URLs: a JSON body has room for one at the upload limit. */
export const inlineImageBodyLimit = (config: Pick<MediaConfig, 'bodyLimit' | 'maxUploadBytes'>): number =>
  Math.max(config.bodyLimit, Math.ceil((config.maxUploadBytes * 4) / 3) + 64 * 1024);

/** How often a stream that has sent nothing yet says it is still working (an SSE comment). */
const STREAM_KEEPALIVE_MS = 10_000;

export interface ImageApiDeps {
  config: MediaConfig;
  service: MediaService;
}

export async function imageApiRoutes(app: FastifyInstance, deps: ImageApiDeps): Promise<void> {
  const { config, service } = deps;
  const started = Math.floor(Date.now() / 1000);

  app.get(
    `${API_PREFIX}images/models`,
    {
      schema: { summary: 'Image models (OpenRouter catalog shape)', tags: ['openrouter'] },
    },
    async () => imageModels(config.routes, '/api/v1', started),
  );
  app.get(
    `${API_PREFIX}images/models/:author/:slug/endpoints`,
    { schema: { summary: "An image model's endpoints", tags: ['openrouter'] } },
    async (req) => {
      const { author, slug } = req.params as { author: string; slug: string };
      const found = imageModelEndpoints(config.routes, author, slug);
      if (!found)
        throw new MediaError(404, 'not_found', `There is no image model ${author}/${slug}`, 'model');
      return found;
    },
  );
  const bodyLimit = inlineImageBodyLimit(config);
  app.post(
    `${API_PREFIX}images`,
    {
      bodyLimit,
      schema: {
        summary: 'Generate images (OpenRouter image API)',
        description:
          'The model is `media/<route name>`: its text-to-image route, or its image-to-image one when `input_references` are given. Fields the route has no equivalent for are listed in `x-gatehouse-dropped-fields`.',
        tags: ['openrouter'],
      },
    },
    (req, reply) => generateImages(OPENROUTER, req, reply),
  );
  app.post(
    `${API_PREFIX}images/edits`,
    {
      bodyLimit,
      schema: {
        summary: 'Edit images (OpenAI Images API)',
        description:
          "OpenAI's image edits: a multipart form with the input images as `image` (or `image[]`) files, or a JSON body whose `images` are `{image_url}` objects; the model's image-to-image route makes the result. Answered as `/images/generations` answers.",
        tags: ['openai'],
      },
    },
    editImages,
  );
  app.post(
    `${API_PREFIX}images/generations`,
    {
      bodyLimit,
      schema: {
        summary: 'Generate images (OpenAI Images API)',
        description:
          'As `POST /api/v1/images`, answered as OpenAI answers: `response_format: "url"` gives the stored images\' URLs.',
        tags: ['openai'],
      },
    },
    (req, reply) => generateImages(OPENAI, req, reply),
  );

  /** `/images` and `/images/generations`: a JSON body. */
  async function generateImages(api: ImageApi, req: FastifyRequest, reply: FastifyReply) {
    const call = api.call(req.body, config.routes);
    const temp = new TempFiles('media');
    try {
      return await generate(api, call, validateGeneration(call.route, call.input), [], temp, req, reply);
    } finally {
      await temp.cleanup();
    }
  }

  /** `/images/edits`: OpenAI's form with uploaded images, or a JSON body naming image URLs. */
  async function editImages(req: FastifyRequest, reply: FastifyReply) {
    const temp = new TempFiles('media');
    try {
      const form = req.isMultipart();
      let body: unknown = req.body;
      let uploads: InputImage[] = [];
      if (form) {
        const read = await readEditForm(req, temp, {
          maxUploadBytes: config.maxUploadBytes,
          fieldBytes: Math.min(config.bodyLimit, 256 * 1024),
        });
        body = read.fields;
        uploads = read.files;
      }
      if (!isObj(body)) throw new MediaError(400, 'invalid_body', 'The body must be a JSON object', 'body');
      const images = uploads.filter((u) => u.param !== MASK_PARAM);
      const call = openAiEditCall(body, config.routes, {
        uploads: images.length,
        form,
        maskFile: images.length < uploads.length,
      });
      const param = call.uploadParam;
      if (param) for (const u of images) u.param = param;
      const valid = validateGeneration(call.route, call.input, {
        form,
        files: uploads.map((u) => u.param),
        filesForLists: true,
      });
      return await generate(OPENAI, call, valid, uploads, temp, req, reply);
    } finally {
      await temp.cleanup();
    }
  }

  /** Makes a call's `n` images (each admitted, generated and billed on its own) and answers them. */
  async function generate(
    api: ImageApi,
    call: ImageCall,
    valid: ValidatedRequest,
    uploads: InputImage[],
    temp: TempFiles,
    req: FastifyRequest,
    reply: FastifyReply,
  ) {
    const dropped = droppedHeader(call.dropped);
    if (dropped) reply.header('x-gatehouse-dropped-fields', dropped);
    const cancel = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) cancel.abort(new Error('client went away'));
    };
    reply.raw.once('close', onClose);
    const stream = call.stream ? new ImageStream(reply, api) : null;
    try {
      const made: StoredOutput[] = [];
      let failure: unknown = null;
      let images: InputImage[] | null = null;
      for (let i = 0; i < call.n && !failure; i++) {
        try {
          // Each image is a generation of its own: admitted (limits, budgets, filters) and billed.
          const admitted = await service.admit(call.route, valid, req.mediaCaller);
          try {
            images ??= [...uploads, ...(await fetchImages(admitted.imageUrls, temp, config, cancel.signal))];
            stream?.start();
            const outputs = await service.generate(
              call.route,
              admitted,
              images,
              cancel.signal,
              req.mediaCaller,
            );
            made.push(...outputs);
            for (const o of outputs) stream?.image(o, costOf(call, req, 1));
          } finally {
            admitted.hold?.release();
          }
        } catch (err) {
          failure = err;
        }
      }
      // Images made before a failure are kept and answered (each was charged); none made: the error.
      if (stream) return stream.end(failure);
      if (made.length === 0) throw failure;
      return api.answer(made, call, costOf(call, req, made.length));
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  /** What the caller was charged for `images` images (only API-key callers are billed). */
  function costOf(call: ImageCall, req: FastifyRequest, images: number): number {
    return req.mediaCaller && service.bills ? (call.route.priceUsd ?? 0) * images : 0;
  }
}

const now = () => Math.floor(Date.now() / 1000);

/** One image API: how its request becomes a call, and how its answers and stream events look. */
interface ImageApi {
  call(body: unknown, routes: MediaRoute[]): ImageCall;
  answer(made: StoredOutput[], call: ImageCall, cost: number): object;
  completed(o: StoredOutput, cost: number): object;
}

/** Images have no tokens; OpenRouter's usage says what was charged. */
const openRouterUsage = (cost: number) => ({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost });
const openAiUsage = {
  input_tokens: 0,
  output_tokens: 0,
  total_tokens: 0,
  input_tokens_details: { text_tokens: 0, image_tokens: 0 },
};
/** OpenAI names the format by its extension (`png`, `jpeg`, `webp`). */
const formatOf = (o: StoredOutput) => o.contentType.replace(/^image\//, '');

const OPENROUTER: ImageApi = {
  call: imageCall,
  answer: (made, _call, cost) => ({
    created: now(),
    data: made.map((o) => ({ b64_json: o.data.toString('base64'), media_type: o.contentType })),
    usage: openRouterUsage(cost),
  }),
  completed: (o, cost) => ({
    type: 'image_generation.completed',
    b64_json: o.data.toString('base64'),
    created: now(),
    media_type: o.contentType,
    usage: openRouterUsage(cost),
  }),
};

const OPENAI: ImageApi = {
  call: openAiImageCall,
  answer: (made, call) => ({
    created: now(),
    data: made.map((o) => (call.asUrl ? { url: o.url } : { b64_json: o.data.toString('base64') })),
    ...(made[0] ? { output_format: formatOf(made[0]) } : {}),
    usage: openAiUsage,
  }),
  completed: (o) => ({
    type: 'image_generation.completed',
    b64_json: o.data.toString('base64'),
    created_at: now(),
    output_format: formatOf(o),
    usage: openAiUsage,
  }),
};

/**
 * The dropped fields as a header value: names a header can carry (a body's keys may hold any
 * character), at most 20 of them; null when there are none to list.
 */
export function droppedHeader(fields: string[]): string | null {
  const named = fields.filter((f) => /^[\w.\-[\]]{1,64}$/.test(f));
  const listed = named.slice(0, 20);
  const more = fields.length - listed.length;
  if (listed.length === 0 && more === 0) return null;
  return [...listed, ...(more > 0 ? [`(${more} more)`] : [])].join(',');
}

/**
 * An SSE answer (`stream: true`): headers once the first image is admitted, a comment every few
 * seconds while nothing else is sent, one `image_generation.completed` event per image, an `error`
 * event for a failure after the start, then `[DONE]`.
 */
class ImageStream {
  private started = false;
  private keepalive: NodeJS.Timeout | undefined;

  constructor(
    private readonly reply: FastifyReply,
    private readonly api: ImageApi,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    const raw = this.reply.raw;
    this.reply.hijack();
    raw.writeHead(200, {
      ...(this.reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-request-id': this.reply.request.id,
    });
    raw.write(': generating\n\n');
    this.keepalive = setInterval(() => raw.write(': generating\n\n'), STREAM_KEEPALIVE_MS);
  }

  image(o: StoredOutput, cost: number): void {
    this.send(this.api.completed(o, cost));
  }

  /** Ends the stream; a failure before anything was sent is thrown, to be answered as JSON. */
  end(failure: unknown): void {
    clearInterval(this.keepalive);
    if (!this.started) throw failure;
    const raw = this.reply.raw;
    if (failure) {
      const err =
        failure instanceof MediaError
          ? failure
          : new MediaError(500, 'internal_error', 'Internal server error');
      if (!(failure instanceof MediaError))
        this.reply.request.log.error({ err: failure }, 'image stream failed');
      this.send({ type: 'error', error: { code: err.code, message: err.message } });
    }
    if (!raw.destroyed) raw.end('data: [DONE]\n\n');
  }

  private send(event: object): void {
    if (!this.reply.raw.destroyed) this.reply.raw.write(`data: ${JSON.stringify(event)}\n\n`);
  }
}
