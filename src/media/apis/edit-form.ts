/**
 * OpenAI's image edits form (`multipart/form-data`): text fields, and the input images as file parts
 * named `image` or `image[]` (uploads.ts streams each to a temp file and sniffs it), and at most one
 * `mask` (the route decides later whether it takes one).
 */

import type { FastifyRequest } from 'fastify';
import type { TempFiles } from '../../lib/temp-files.js';
import { MASK_PARAM, MediaError } from '../types.js';
import { type MultipartBody, readImageForm } from '../uploads.js';

/** The most input images one edit may upload. */
const MAX_IMAGES = 16;

export function readEditForm(
  req: FastifyRequest,
  temp: TempFiles,
  limits: { maxUploadBytes: number; fieldBytes: number },
): Promise<MultipartBody> {
  return readImageForm(req, temp, limits, (name, saved) => {
    if (name === MASK_PARAM)
      return saved.some((f) => f.param === MASK_PARAM)
        ? new MediaError(400, 'invalid_value', 'An edit takes one mask', MASK_PARAM)
        : MASK_PARAM;
    if (name !== 'image' && name !== 'image[]')
      return new MediaError(
        400,
        'unknown_parameter',
        `${name} is not a file an edit takes (image, mask)`,
        name,
      );
    if (saved.filter((f) => f.param !== MASK_PARAM).length >= MAX_IMAGES)
      return new MediaError(400, 'invalid_value', `An edit takes at most ${MAX_IMAGES} images`, 'image');
    return 'image';
  });
}
