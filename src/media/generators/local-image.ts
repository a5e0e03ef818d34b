/**
 * Images for the local generator, drawn with sharp: a composition (gradient, glow, shapes) whose
 * colours and geometry come from the prompt's digest, the prompt's first words on a translucent band,
 * and for image-to-image the input image underneath so it stays recognizable.
 */

import sharp, { type Metadata, type OverlayOptions, type Sharp } from 'sharp';
import { type InputImage, MediaError } from '../types.js';
import { type Palette, type Rng, rngFrom } from './local-palette.js';

// libvips keeps the results of recent operations (up to 50 MB) for reuse; no generation here
// repeats an earlier one's operations, so the cache only adds to the service's peak memory.
sharp.cache(false);

export type ImageFormat = 'png' | 'jpeg' | 'webp';

export const IMAGE_TYPES: Record<ImageFormat, { contentType: string; extension: string }> = {
  png: { contentType: 'image/png', extension: 'png' },
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
  webp: { contentType: 'image/webp', extension: 'webp' },
};

/** The largest side the generator draws (a guard against absurd sizes from a lax route). */
export const MAX_SIDE = 4096;
/** Input images larger than this many pixels are refused (decompression bombs). */
export const MAX_INPUT_PIXELS = 8192 * 8192;
/** Input formats decoded; SVG/PDF and friends are refused (they can reference other files). */
const INPUT_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif', 'avif', 'heif', 'tiff']);

export function outputFormat(value: unknown): ImageFormat {
  if (value === 'jpg' || value === 'jpeg') return 'jpeg';
  if (value === 'webp') return 'webp';
  return 'png';
}

/** `W:H` (or `WxH`) → the ratio, or undefined when absent/unparseable (`auto`, `adaptive`). */
export function parseAspect(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*[:x/]\s*(\d+(?:\.\d+)?)\s*$/i.exec(value);
  if (!m) return undefined;
  const ratio = Number(m[1]) / Number(m[2]);
  return Number.isFinite(ratio) && ratio > 0 ? ratio : undefined;
}

const round8 = (n: number) => Math.max(8, Math.round(n / 8) * 8);

/**
 * The long side for a `size` value: `1K` → 1024, `2K` → 2048 (`nK` → n×1024), a bare number → that
 * many pixels; anything else → 1024.
 */
export function longSideFor(size: unknown): number {
  if (typeof size === 'number' && size > 0) return Math.min(MAX_SIDE, round8(size));
  if (typeof size === 'string') {
    const k = /^\s*(\d+(?:\.\d+)?)\s*k\s*$/i.exec(size);
    if (k) return Math.min(MAX_SIDE, round8(Number(k[1]) * 1024));
    const n = /^\s*(\d+)\s*$/.exec(size);
    if (n) return Math.min(MAX_SIDE, round8(Number(n[1])));
  }
  return 1024;
}

/**
 * Output dimensions: `size` as `WxH` is taken as given; otherwise the long side comes from `size`
 * and the other side from `aspect_ratio` (or `fallbackRatio`, e.g. the input image's; else square),
 * rounded to a multiple of 8.
 */
export function imageDimensions(
  size: unknown,
  aspectRatio: unknown,
  fallbackRatio?: number,
): { width: number; height: number } {
  if (typeof size === 'string') {
    const wh = /^\s*(\d+)\s*[x×*]\s*(\d+)\s*$/i.exec(size);
    if (wh) {
      return {
        width: Math.min(MAX_SIDE, round8(Number(wh[1]))),
        height: Math.min(MAX_SIDE, round8(Number(wh[2]))),
      };
    }
  }
  const long = longSideFor(size);
  const ratio = parseAspect(aspectRatio) ?? fallbackRatio ?? 1;
  if (ratio >= 1) return { width: long, height: Math.min(long, round8(long / ratio)) };
  return { width: Math.min(long, round8(long * ratio)), height: long };
}

// ---------------------------------------------------------------------------------------------
// Drawing (SVG rendered by sharp's librsvg)

const XML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c] ?? c);
}

/** Up to two lines of the prompt's first ~80 characters, XML-safe, word-wrapped. */
export function captionLines(prompt: string, maxChars = 80, perLine = 42): string[] {
  // Only characters XML allows; whitespace collapsed; code points, not UTF-16 units.
  const chars = Array.from(prompt.replace(/\s+/g, ' ').trim()).filter((ch) => {
    const cp = ch.codePointAt(0) ?? 0;
    return cp >= 0x20 && cp !== 0x7f && !(cp >= 0xd800 && cp <= 0xdfff) && cp !== 0xfffe && cp !== 0xffff;
  });
  let text = chars.slice(0, maxChars).join('');
  if (chars.length > maxChars) text = `${text.trimEnd()}…`;
  if (!text) return [];
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const candidate = line ? `${line} ${word}` : word;
    if (Array.from(candidate).length <= perLine) {
      line = candidate;
      continue;
    }
    if (line) lines.push(line);
    line = word;
    // A single word longer than a line is cut.
    while (Array.from(line).length > perLine) {
      const cps = Array.from(line);
      lines.push(cps.slice(0, perLine).join(''));
      line = cps.slice(perLine).join('');
    }
  }
  if (line) lines.push(line);
  if (lines.length > 2) {
    const second = Array.from(lines[1] ?? '');
    lines.length = 2;
    lines[1] = `${second.slice(0, perLine - 1).join('')}…`;
  }
  return lines;
}

export interface CompositionOptions {
  /** `full` draws the gradient background; `overlay` draws translucent shapes for over an input image. */
  mode: 'full' | 'overlay';
  /** Leave out the glow and shapes (the video draws its own moving subject). */
  shapes?: boolean;
}

function shapeSvg(rng: Rng, palette: Palette, i: number, w: number, h: number, opacityScale: number): string {
  const min = Math.min(w, h);
  const x = rng.range(0, w).toFixed(1);
  const y = rng.range(0, h).toFixed(1);
  const s = rng.range(0.06, 0.3) * min;
  const fill = palette.accents[i % palette.accents.length] ?? '#ffffff';
  const opacity = (rng.range(0.45, 0.85) * opacityScale).toFixed(2);
  const angle = rng.range(0, 360).toFixed(1);
  switch (rng.int(0, 3)) {
    case 0:
      return `<circle cx="${x}" cy="${y}" r="${(s / 2).toFixed(1)}" fill="${fill}" fill-opacity="${opacity}"/>`;
    case 1: {
      const rw = s * rng.range(0.6, 1.6);
      const rh = s * rng.range(0.3, 1);
      return `<rect x="${(-rw / 2).toFixed(1)}" y="${(-rh / 2).toFixed(1)}" width="${rw.toFixed(1)}" height="${rh.toFixed(1)}" rx="${(rh / 6).toFixed(1)}" fill="${fill}" fill-opacity="${opacity}" transform="translate(${x} ${y}) rotate(${angle})"/>`;
    }
    case 2: {
      const r = s / 2;
      const pts = [0, 120, 240]
        .map((a) => {
          const rad = ((a + Number(angle)) * Math.PI) / 180;
          return `${(Number(x) + r * Math.cos(rad)).toFixed(1)},${(Number(y) + r * Math.sin(rad)).toFixed(1)}`;
        })
        .join(' ');
      return `<polygon points="${pts}" fill="${fill}" fill-opacity="${opacity}"/>`;
    }
    default:
      return `<circle cx="${x}" cy="${y}" r="${(s / 2).toFixed(1)}" fill="none" stroke="${fill}" stroke-opacity="${opacity}" stroke-width="${(s / 10).toFixed(1)}"/>`;
  }
}

/** The prompt-derived composition as SVG markup (without the caption). */
export function compositionSvg(
  digest: Buffer,
  palette: Palette,
  w: number,
  h: number,
  opts: CompositionOptions,
): string {
  const rng = rngFrom(digest, 2);
  const angle = rng.range(0, Math.PI * 2);
  const [c0, c1, c2] = palette.background;
  const gx = (0.5 + 0.5 * Math.cos(angle)).toFixed(3);
  const gy = (0.5 + 0.5 * Math.sin(angle)).toFixed(3);
  const gx2 = (0.5 - 0.5 * Math.cos(angle)).toFixed(3);
  const gy2 = (0.5 - 0.5 * Math.sin(angle)).toFixed(3);
  const glowX = (rng.range(0.2, 0.8) * w).toFixed(1);
  const glowY = (rng.range(0.2, 0.8) * h).toFixed(1);
  const glowR = (rng.range(0.25, 0.5) * Math.max(w, h)).toFixed(1);
  const overlay = opts.mode === 'overlay';
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">`,
    '<defs>',
    `<linearGradient id="bg" x1="${gx2}" y1="${gy2}" x2="${gx}" y2="${gy}">`,
    `<stop offset="0" stop-color="${c0}"/><stop offset="0.55" stop-color="${c1}"/><stop offset="1" stop-color="${c2}"/>`,
    '</linearGradient>',
    `<radialGradient id="glow"><stop offset="0" stop-color="${palette.accents[0]}" stop-opacity="${overlay ? 0.35 : 0.75}"/><stop offset="1" stop-color="${palette.accents[0]}" stop-opacity="0"/></radialGradient>`,
    '</defs>',
    `<rect width="${w}" height="${h}" fill="url(#bg)"${overlay ? ' fill-opacity="0.22"' : ''}/>`,
  ];
  if (opts.shapes !== false) {
    parts.push(`<circle cx="${glowX}" cy="${glowY}" r="${glowR}" fill="url(#glow)"/>`);
    const count = rng.int(7, 11);
    for (let i = 0; i < count; i++) parts.push(shapeSvg(rng, palette, i, w, h, overlay ? 0.45 : 1));
  }
  parts.push('</svg>');
  return parts.join('');
}

/** The caption band: the prompt's first words, white on translucent black, across the bottom. */
export function captionSvg(
  prompt: string,
  w: number,
  h: number,
): { svg: string; height: number } | undefined {
  const lines = captionLines(prompt);
  if (lines.length === 0) return undefined;
  const fontSize = Math.max(10, Math.floor(Math.min(w / 25, h / 13)));
  const lineHeight = Math.round(fontSize * 1.3);
  const pad = Math.round(fontSize * 0.6);
  const height = Math.min(h, lines.length * lineHeight + 2 * pad);
  const text = lines
    .map(
      (line, i) =>
        `<text x="${w / 2}" y="${pad + i * lineHeight + Math.round(fontSize * 1.02)}" text-anchor="middle">${escapeXml(line)}</text>`,
    )
    .join('');
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${height}" viewBox="0 0 ${w} ${height}">` +
    `<rect width="${w}" height="${height}" fill="#000000" fill-opacity="0.5"/>` +
    `<g font-family="DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif" font-size="${fontSize}" fill="#ffffff">${text}</g>` +
    '</svg>';
  return { svg, height };
}

// ---------------------------------------------------------------------------------------------
// Input images

/** An input image decoded and checked; `width`/`height` are after EXIF orientation. */
export interface DecodedInput {
  image: InputImage;
  width: number;
  height: number;
  hasAlpha: boolean;
}

function invalidImage(image: InputImage, detail: string): MediaError {
  return new MediaError(
    400,
    'invalid_image',
    `${image.param}: not a readable image (${detail})`,
    image.param,
  );
}

function inputPipeline(image: InputImage): Sharp {
  return sharp(image.path, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'warning', pages: 1 }).autoOrient();
}

/** Reads an input image's header: a known raster format of sane size, or a 400 naming its parameter. */
export async function probeInput(image: InputImage): Promise<DecodedInput> {
  let meta: Metadata;
  try {
    meta = await sharp(image.path, { limitInputPixels: MAX_INPUT_PIXELS, pages: 1 }).metadata();
  } catch (err) {
    throw invalidImage(
      image,
      err instanceof Error ? err.message.split('\n')[0] || 'unreadable' : 'unreadable',
    );
  }
  if (!meta.format || !INPUT_FORMATS.has(meta.format)) {
    throw invalidImage(image, `unsupported format ${meta.format ?? 'unknown'}`);
  }
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (!width || !height) throw invalidImage(image, 'no dimensions');
  if (width * height > MAX_INPUT_PIXELS) throw invalidImage(image, `${width}×${height} is too large`);
  return { image, width, height, hasAlpha: meta.hasAlpha === true };
}

/**
 * Decodes an input fully, covered and centred to `w`×`h`, as raw RGB (transparency flattened on
 * grey). A decode failure (a truncated or corrupt file) is a 400 naming its parameter.
 */
export async function decodeInputRaw(input: DecodedInput, w: number, h: number): Promise<Buffer> {
  try {
    return await inputPipeline(input.image)
      .resize(w, h, { fit: 'cover', position: 'centre' })
      .flatten({ background: '#808080' })
      .toColourspace('srgb')
      .removeAlpha()
      .raw()
      .toBuffer();
  } catch (err) {
    throw invalidImage(
      input.image,
      err instanceof Error ? err.message.split('\n')[0] || 'corrupt' : 'corrupt',
    );
  }
}

/**
 * An inpainting mask's alpha channel, covered and centred to `w`×`h` as the input is: 0 where the
 * image is edited. A mask without an alpha channel says nothing about where: a 400, as OpenAI's.
 */
export async function decodeMaskAlpha(mask: DecodedInput, w: number, h: number): Promise<Buffer> {
  if (!mask.hasAlpha)
    throw new MediaError(
      400,
      'invalid_image',
      `${mask.image.param}: needs an alpha channel (transparent where the image is to be edited)`,
      mask.image.param,
    );
  try {
    return await inputPipeline(mask.image)
      .resize(w, h, { fit: 'cover', position: 'centre' })
      .extractChannel('alpha')
      .raw()
      .toBuffer();
  } catch (err) {
    throw invalidImage(
      mask.image,
      err instanceof Error ? err.message.split('\n')[0] || 'corrupt' : 'corrupt',
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Whole images

export function encode(pipeline: Sharp, format: ImageFormat): Promise<Buffer> {
  switch (format) {
    case 'jpeg':
      return pipeline.jpeg({ quality: 88, mozjpeg: false }).toBuffer();
    case 'webp':
      return pipeline.webp({ quality: 85, effort: 3 }).toBuffer();
    default:
      return pipeline.png({ compressionLevel: 6 }).toBuffer();
  }
}

export interface ImageJob {
  prompt: string;
  digest: Buffer;
  palette: Palette;
  width: number;
  height: number;
  format: ImageFormat;
  /** i2i: the first image is the background; the rest appear as thumbnails along the top. */
  inputs: DecodedInput[];
  /** i2i: where the first image is edited (transparent); elsewhere it stays as it was. */
  mask?: DecodedInput;
  signal: AbortSignal;
}

/** Renders one image: the composition (or the input under a translucent one) plus the caption. */
export async function renderImage(job: ImageJob): Promise<Buffer> {
  const { width: w, height: h, signal } = job;
  const [first, ...others] = job.inputs;
  const layers: OverlayOptions[] = [];
  let base: Sharp;
  if (first) {
    const raw = await decodeInputRaw(first, w, h);
    signal.throwIfAborted();
    base = sharp(raw, { raw: { width: w, height: h, channels: 3 } });
    layers.push({ input: Buffer.from(compositionSvg(job.digest, job.palette, w, h, { mode: 'overlay' })) });
  } else {
    base = sharp(Buffer.from(compositionSvg(job.digest, job.palette, w, h, { mode: 'full' })));
  }
  // Further inputs (i2i with several images): thumbnails along the top edge.
  const thumbH = Math.max(16, Math.round(h / 6));
  const margin = Math.max(4, Math.round(thumbH / 8));
  let left = margin;
  for (const other of others.slice(0, 4)) {
    const thumbW = Math.max(16, Math.round((thumbH * other.width) / other.height));
    if (left + thumbW + margin > w) break;
    const raw = await decodeInputRaw(other, thumbW, thumbH);
    signal.throwIfAborted();
    layers.push({ input: raw, raw: { width: thumbW, height: thumbH, channels: 3 }, top: margin, left });
    left += thumbW + margin;
  }
  const caption = captionSvg(job.prompt, w, h);
  if (caption) layers.push({ input: Buffer.from(caption.svg), top: h - caption.height, left: 0 });
  if (first && job.mask) {
    // Inpainting: the input, opaque where the mask is, goes back on top of everything drawn.
    const alpha = await decodeMaskAlpha(job.mask, w, h);
    const kept = await sharp(await decodeInputRaw(first, w, h), { raw: { width: w, height: h, channels: 3 } })
      .joinChannel(alpha, { raw: { width: w, height: h, channels: 1 } })
      .raw()
      .toBuffer();
    signal.throwIfAborted();
    layers.push({ input: kept, raw: { width: w, height: h, channels: 4 } });
  }
  // Every output is opaque RGB.
  return encode(base.composite(layers).removeAlpha(), job.format);
}
