/**
 * The media service's contracts: routes from configuration, what a generator is asked and gives
 * back, and the object store outputs go to. The service (server.ts, routes.ts) validates a request
 * against its route, hands the generator a GenerateRequest, stores each output, answers URLs.
 */

import type { Readable } from 'node:stream';
import type { Caller } from '../accounts/caller.js';

export type MediaKind = 't2i' | 'i2i' | 'video';

/** One parameter a route takes (besides `prompt`, which every route requires). */
export type ParamSpec =
  | { type: 'string'; enum?: string[]; default?: string; required?: boolean; maxLength?: number }
  | { type: 'integer'; enum?: number[]; min?: number; max?: number; default?: number; required?: boolean }
  | { type: 'boolean'; default?: boolean; required?: boolean }
  /** A list of http(s) image URLs (e.g. `image_input`, `reference_images`). */
  | { type: 'image_urls'; minItems?: number; maxItems?: number; required?: boolean }
  /** One image: a URL in JSON, or a multipart file part of this name. */
  | { type: 'image'; required?: boolean };

/**
 * A route's `image` parameter of this name is an inpainting mask, not an input image: transparent
 * (alpha 0) where the image is to be edited, as OpenAI's image edits take it. It needs an input
 * image beside it, does not count as one, and generators pass it apart (a `mask` part, `mask_url`).
 */
export const MASK_PARAM = 'mask';

/** A route `POST /api/<kind>/<name>`, mapped to a provider and that provider's model. */
export interface MediaRoute {
  kind: MediaKind;
  /** The path segment (`model-a`, `model-b`, `video-model` by default). */
  name: string;
  /** A configured provider slug; `local` is the built-in generator. */
  provider: string;
  /** The provider's own model id. */
  providerModel: string;
  /** Parameters beyond `prompt`, by name; anything else in a request is a 400. */
  params: Record<string, ParamSpec>;
  /** At least one input image is needed (i2i): from any `image`/`image_urls` parameter. */
  requiresImage?: boolean;
  description?: string;
  /** USD charged per output to the calling key's organization (`GATEHOUSE_MEDIA_AUTH=keys`); 0 = free. */
  priceUsd?: number;
}

/** The provider a route is served by as guardrails and catalogs name it: the built-in generator is `gatehouse`. */
export const providerSlugOf = (route: MediaRoute): string =>
  route.provider === 'local' ? 'gatehouse' : route.provider;

/**
 * Charges generations to the caller's organization. Built by the gateway's composition root
 * (services.ts), which owns accounting and credits: the media service only sees this interface.
 */
export interface MediaBilling {
  /**
   * Admits a generation by `caller` as an inference call is admitted: rate limit (429), the key's
   * limits and guardrail budgets, the guardrail's model list (`model` = `media/<kind>/<route>`) and
   * provider lists, its content filters on `prompt` (403), and, when `costUsd` > 0, the balance
   * (402). Throws MediaError; returns the prompt to generate from (redacted by the filters).
   */
  admit(
    caller: Caller,
    g: { model: string; provider: string; costUsd: number; prompt: string },
  ): Promise<{ prompt: string; hold: MediaHold | null }>;
  /**
   * Records a served generation: the key's usage, budgets and the credits balance count it (and
   * the generation's reservation, if any, is settled with it).
   */
  record(
    caller: Caller,
    g: {
      kind: MediaKind;
      route: string;
      provider: string;
      providerModel: string;
      costUsd: number;
      latencyMs: number;
    },
    hold?: MediaHold | null,
  ): void | Promise<void>;
}

/**
 * A priced generation's spend reservation (its price, held against the key's limit, budgets and
 * credits while it runs): settled by `record`, released when the generation fails.
 */
export interface MediaHold {
  release(): void;
}

/** An input image, already on local disk (uploads are streamed to a temp file, URLs fetched to one). */
export interface InputImage {
  path: string;
  contentType: string;
  bytes: number;
  /** The parameter it came from (`image`, `image_input`, `reference_images`). */
  param: string;
}

/** What a generator is asked to make. `params` holds the validated values, defaults applied. */
export interface GenerateRequest {
  kind: MediaKind;
  route: string;
  providerModel: string;
  prompt: string;
  params: Record<string, string | number | boolean | string[]>;
  images: InputImage[];
}

/** One generated file. */
export interface GeneratedOutput {
  data: Buffer;
  contentType: string;
  /** File extension without the dot (`png`, `jpg`, `webp`, `gif`, `mp4` …). */
  extension: string;
}

export interface MediaGenerator {
  generate(req: GenerateRequest, signal: AbortSignal): Promise<GeneratedOutput[]>;
}

/** Where outputs are kept; `url` is what the client fetches. */
export interface ObjectStore {
  put(key: string, data: Buffer, contentType: string): Promise<{ url: string; key: string }>;
  /** Removes a stored output (the other outputs of a generation that could not be stored whole). */
  delete?(key: string): Promise<void>;
  /** A stored output opened for reading (a video job's content); null when there is none. */
  open?(key: string): Promise<{ stream: Readable; size?: number; contentType: string } | null>;
}

/**
 * A generation failure to surface: 400 (bad input found late), 502 (provider failed), 504 (timed
 * out), 507 `storage_full` (the object store has no space left for the output).
 */
export class MediaError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'MediaError';
  }
}
