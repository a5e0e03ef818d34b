/**
 * OpenAI's image edits form (`multipart/form-data`): text fields, and the input images as file parts
 * named `image` or `image[]` (uploads.ts streams each to a temp file and sniffs it). A `mask` file
 * is refused, naming it: the media routes edit whole images.
 */

import type { FastifyRequest } from 'fastify';
import type { TempFiles } from '../../lib/temp-files.js';
import { MediaError } from '../types.js';
import { type MultipartBody, readImageForm } from '../uploads.js';

/** The most input images one edit may upload. */
const MAX_IMAGES = 16;

export function readEditForm(
  req: FastifyRequest,
  temp: TempFiles,
  limits: { maxUploadBytes: number; fieldBytes: number },
): Promise<MultipartBody> {
  return readImageForm(req, temp, limits, (name, saved) => {
    if (name === 'mask')
      return new MediaError(
        400,
        'invalid_value',
        'A mask (inpainting) is not supported: the media routes edit whole images',
        'mask',
      );
    if (name !== 'image' && name !== 'image[]')
      return new MediaError(400, 'unknown_parameter', `${name} is not a file an edit takes (image)`, name);
    if (saved.length >= MAX_IMAGES)
      return new MediaError(400, 'invalid_value', `An edit takes at most ${MAX_IMAGES} images`, 'image');
    return 'image';
  });
}
