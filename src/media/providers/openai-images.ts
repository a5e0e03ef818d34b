/**
 * `openai-images`: a synchronous image API in the OpenAI Images wire format (OpenAI itself, Azure-
 * style and OpenAI-compatible servers). `Authorization: Bearer <api key>`.
 *
 * t2i → `POST {base}/images/generations`, JSON
 *   `{model, prompt, n: 1, size, quality?, output_format?, response_format: "b64_json"}`
 * i2i → `POST {base}/images/edits`, multipart/form-data: `model`, `prompt`, `n`, `size`?, `quality`?,
 *   `output_format`?, `response_format`, and each input image as an `image[]` file part streamed
 *   from its temp file (never read whole into memory); a route's `mask` as the `mask` part.
 * Answer `{data: [{b64_json} | {url}]}`: base64 decoded, URLs fetched under `max_output_bytes`;
 * every output sniffed (PNG/JPEG/WebP/GIF) — anything else is 502 invalid_provider_response.
 *
 * Parameter mapping (from the route's validated params):
 * - `output_format` (png/jpeg/webp) → `output_format`; `quality` → `quality`.
 * - `size` given as `WxH` (e.g. 1024x1024) → sent as is.
 * - otherwise the aspect ratio (`aspect_ratio` W:H) picks one of OpenAI's sizes: wider than 1.1:1 →
 *   `1536x1024`, taller than 1:1.1 → `1024x1536`, else `1024x1024`; the size class (`1K`/`2K`) has no
 *   OpenAI equivalent and is not sent. t2i with no aspect ratio → `1024x1024`; i2i with none → no
 *   `size` (the API keeps the input's shape, `auto`).
 */

import { openAsBlob } from 'node:fs';
import { FormData } from 'undici';
import type { GeneratedOutput, GenerateRequest, MediaGenerator } from '../types.js';
import { MASK_PARAM, MediaError } from '../types.js';
import type { MediaProviderConfig } from './config.js';
import { decodeBase64, ProviderHttp, type ProviderHttpOptions, sniffOutput } from './http.js';

export function openAiSize(
  params: GenerateRequest['params'],
  kind: GenerateRequest['kind'],
): string | undefined {
  const size = params.size;
  if (typeof size === 'string' && /^\d{2,5}x\d{2,5}$/.test(size)) return size;
  const ar = params.aspect_ratio;
  if (typeof ar === 'string') {
    const m = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(ar);
    if (m) {
      const ratio = Number(m[1]) / Number(m[2]);
      if (ratio > 1.1) return '1536x1024';
      if (ratio < 1 / 1.1) return '1024x1536';
      return '1024x1024';
    }
  }
  return kind === 't2i' ? '1024x1024' : undefined;
}

export class OpenAiImagesGenerator implements MediaGenerator {
  readonly http: ProviderHttp;

  constructor(config: MediaProviderConfig, options: ProviderHttpOptions = {}) {
    this.http = new ProviderHttp(config, options);
  }

  async generate(req: GenerateRequest, signal: AbortSignal): Promise<GeneratedOutput[]> {
    signal.throwIfAborted();
    if (req.kind === 'video')
      throw new MediaError(
        500,
        'internal_error',
        `Provider "${this.http.config.slug}" (openai-images) cannot serve a video route`,
      );
    const size = openAiSize(req.params, req.kind);
    const str = (k: string) => (typeof req.params[k] === 'string' ? (req.params[k] as string) : undefined);
    const fields: Record<string, string | number> = {
      model: req.providerModel,
      prompt: req.prompt,
      n: 1,
      ...(size ? { size } : {}),
      ...(str('quality') ? { quality: str('quality') as string } : {}),
      ...(str('output_format') ? { output_format: str('output_format') as string } : {}),
      response_format: 'b64_json',
    };

    let answer: unknown;
    if (req.kind === 'i2i' && req.images.length > 0) {
      // Blobs backed by the temp files: each attempt streams them from disk.
      const blobs = await Promise.all(req.images.map((i) => openAsBlob(i.path, { type: i.contentType })));
      const partOf = (i: number) => (req.images[i]?.param === MASK_PARAM ? MASK_PARAM : 'image[]');
      answer = await this.http.json(
        {
          method: 'POST',
          url: this.http.url('images/edits'),
          operation: 'images/edits',
          body: () => {
            const form = new FormData();
            for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
            blobs.forEach((blob, i) => {
              const ext = (req.images[i]?.contentType.split('/')[1] ?? 'png').replace('jpeg', 'jpg');
              form.append(partOf(i), blob, `${partOf(i) === MASK_PARAM ? 'mask' : 'image'}-${i}.${ext}`);
            });
            return { body: form };
          },
        },
        signal,
      );
    } else {
      answer = await this.http.json(
        {
          method: 'POST',
          url: this.http.url('images/generations'),
          operation: 'images/generations',
          body: () => ({ body: JSON.stringify(fields), contentType: 'application/json' }),
        },
        signal,
      );
    }
    return this.outputs(answer, req, signal);
  }

  private async outputs(
    answer: unknown,
    req: GenerateRequest,
    signal: AbortSignal,
  ): Promise<GeneratedOutput[]> {
    const data = (answer as { data?: unknown } | null)?.data;
    if (!Array.isArray(data) || data.length === 0) throw this.http.invalid('answered without any image');
    const out: GeneratedOutput[] = [];
    for (const item of data) {
      const it = (item ?? {}) as { b64_json?: unknown; url?: unknown };
      let bytes: Buffer;
      if (typeof it.b64_json === 'string') {
        const decoded = decodeBase64(it.b64_json);
        if (!decoded) throw this.http.invalid('sent an image whose b64_json is not valid base64');
        if (decoded.length > this.http.config.maxOutputBytes)
          throw this.http.invalid(`sent an image larger than ${this.http.config.maxOutputBytes} bytes`);
        bytes = decoded;
      } else if (typeof it.url === 'string') {
        bytes = await this.http.fetchOutput(it.url, signal);
      } else throw this.http.invalid('sent an image with neither b64_json nor url');
      const type = sniffOutput(bytes, req.kind);
      if (!type) throw this.http.invalid('sent an output that is not a PNG, JPEG, WebP or GIF image');
      out.push({ data: bytes, ...type });
    }
    return out;
  }
}
