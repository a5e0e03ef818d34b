/**
 * The built-in local generator: the media service's offline default. Real, viewable outputs drawn
 * with sharp, deterministic from the prompt (a SHA-256 of it picks colours and geometry; the
 * prompt's first words are written on the picture):
 *
 * - t2i: PNG/JPEG/WebP (`output_format`, default PNG) at `size` (1K → long side 1024, 2K → 2048)
 *   and `aspect_ratio` (W:H; default square), sides rounded to a multiple of 8.
 * - i2i: the first input image, cover-cropped to the output size, under a translucent version of the
 *   prompt's composition and the caption; further inputs as thumbnails along the top. Without an
 *   `aspect_ratio` the output keeps the input's. With a `mask`, only its transparent area changes:
 *   elsewhere the input is kept as it was (inpainting as OpenAI's edits do it).
 * - video: an animated WebP, or an H.264 MP4 with `output_format: mp4`, 8 fps × `duration` seconds
 *   at `resolution` (480p → 854×480, 720p → 1280×720): a seamless zoom/pan loop over the
 *   composition or the `image` input with a moving subject (`camera_fixed` keeps the camera still).
 */

import { type GeneratedOutput, type GenerateRequest, MASK_PARAM, type MediaGenerator } from '../types.js';
import {
  type DecodedInput,
  IMAGE_TYPES,
  imageDimensions,
  outputFormat,
  probeInput,
  renderImage,
} from './local-image.js';
import { paletteFor, promptDigest } from './local-palette.js';
import { frameCount, renderVideo, VIDEO_TYPES, videoDimensions, videoFormat } from './local-video.js';

export class LocalGenerator implements MediaGenerator {
  async generate(req: GenerateRequest, signal: AbortSignal): Promise<GeneratedOutput[]> {
    signal.throwIfAborted();
    const digest = promptDigest(req.prompt);
    const palette = paletteFor(req.prompt, digest);

    // Every input is checked (a 400 naming its parameter) before any drawing starts.
    const inputs: DecodedInput[] = [];
    for (const image of req.images) {
      inputs.push(await probeInput(image));
      signal.throwIfAborted();
    }

    // A mask is not a picture: it says where the first one is edited.
    const pictures = inputs.filter((i) => i.image.param !== MASK_PARAM);
    const mask = inputs.find((i) => i.image.param === MASK_PARAM);

    if (req.kind === 'video') {
      const { width, height } = videoDimensions(req.params.resolution);
      const format = videoFormat(req.params.output_format);
      const data = await renderVideo({
        prompt: req.prompt,
        digest,
        palette,
        width,
        height,
        frames: frameCount(req.params.duration),
        cameraFixed: req.params.camera_fixed === true || req.params.camera_fixed === 'true',
        input: pictures.find((i) => i.image.param === 'image') ?? pictures[0],
        signal,
        format,
      });
      return [{ data, ...VIDEO_TYPES[format] }];
    }

    const first = pictures[0];
    const { width, height } = imageDimensions(
      req.params.size,
      req.params.aspect_ratio,
      first ? first.width / first.height : undefined,
    );
    const format = outputFormat(req.params.output_format);
    const data = await renderImage({
      prompt: req.prompt,
      digest,
      palette,
      width,
      height,
      format,
      inputs: req.kind === 'i2i' ? pictures : [],
      mask: req.kind === 'i2i' ? mask : undefined,
      signal,
    });
    return [{ data, ...IMAGE_TYPES[format] }];
  }
}
