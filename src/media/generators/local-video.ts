/**
 * Short animations for the local generator's video route: an animated WebP (every current browser
 * plays it in an <img>, loops, full colour — unlike GIF's 256), or an H.264 MP4 (what video
 * clients expect; local-mp4.ts). A slow zoom-and-pan over the
 * prompt's composition (or over the input image) with a glowing subject moving along a path drawn
 * from the prompt's digest, the caption on top. The loop is seamless: camera and subject return
 * to where they started.
 *
 * Frames are encoded one at a time as still WebP and packed into the animated-WebP RIFF container
 * here, so memory holds one raw frame per worker plus the compressed frames (a 10 s 720p clip at
 * 8 fps would be 220 MB of stacked raw frames for sharp's own animated encoder).
 */

import sharp, { type OverlayOptions, type Sharp } from 'sharp';
import { captionSvg, compositionSvg, type DecodedInput, decodeInputRaw } from './local-image.js';
import { mp4Encoder } from './local-mp4.js';
import { type Palette, rngFrom } from './local-palette.js';

export const VIDEO_FPS = 8;
/** At most this many frames whatever the duration (30 s at 8 fps). */
export const MAX_FRAMES = 240;

/** `480p` → 854×480, `720p` → 1280×720, `1080p` → 1920×1080 (16:9, even width); default 720p. */
export function videoDimensions(resolution: unknown): { width: number; height: number } {
  const m = typeof resolution === 'string' ? /^\s*(\d{3,4})\s*p\s*$/i.exec(resolution) : null;
  const height = m ? Math.min(2160, Math.max(144, Number(m[1]))) : 720;
  const width = Math.round((height * 16) / 9 / 2) * 2;
  return { width, height };
}

export type VideoFormat = 'webp' | 'mp4';
export const VIDEO_TYPES: Record<VideoFormat, { contentType: string; extension: string }> = {
  webp: { contentType: 'image/webp', extension: 'webp' },
  mp4: { contentType: 'video/mp4', extension: 'mp4' },
};
/** The route's `output_format`: `mp4`, else the animated WebP. */
export const videoFormat = (value: unknown): VideoFormat => (value === 'mp4' ? 'mp4' : 'webp');

export function frameCount(duration: unknown): number {
  const seconds = typeof duration === 'number' && duration > 0 ? duration : Number(duration) || 5;
  return Math.max(2, Math.min(MAX_FRAMES, Math.round(seconds * VIDEO_FPS)));
}

export interface VideoJob {
  prompt: string;
  digest: Buffer;
  palette: Palette;
  width: number;
  height: number;
  frames: number;
  /** `camera_fixed`: no zoom/pan, only the subject moves. */
  cameraFixed: boolean;
  input?: DecodedInput;
  signal: AbortSignal;
  /** Frames encoded at once (sharp's thread pool does the work); default 2. */
  parallel?: number;
  /** Default `webp`. */
  format?: VideoFormat;
}

/** How far the camera zooms in at the middle of the loop. */
const ZOOM = 1.2;

interface Layer {
  data: Buffer;
  width: number;
  height: number;
}

async function rasterize(svg: string): Promise<Layer> {
  const { data, info } = await sharp(Buffer.from(svg))
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function subjectSvg(palette: Palette, size: number): string {
  const r = size / 2;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}">` +
    `<defs><radialGradient id="g"><stop offset="0" stop-color="#ffffff" stop-opacity="0.95"/>` +
    `<stop offset="0.35" stop-color="${palette.highlight}" stop-opacity="0.9"/>` +
    `<stop offset="1" stop-color="${palette.highlight}" stop-opacity="0"/></radialGradient></defs>` +
    `<circle cx="${r}" cy="${r}" r="${r}" fill="url(#g)"/>` +
    `<circle cx="${r}" cy="${r}" r="${(r * 0.42).toFixed(1)}" fill="none" stroke="#ffffff" stroke-opacity="0.9" stroke-width="${Math.max(1, size / 40).toFixed(1)}"/>` +
    '</svg>'
  );
}

/** Renders the frames and returns the clip: an animated WebP, or an MP4. */
export async function renderVideo(job: VideoJob): Promise<Buffer> {
  const { width: w, height: h, frames, signal } = job;
  const mp4 = job.format === 'mp4';
  // The background, larger than the frame so the camera can move over it: the composition, or the
  // input image under a translucent one (as for i2i).
  const bw = Math.ceil(w * ZOOM);
  const bh = Math.ceil(h * ZOOM);
  let base: Sharp;
  if (job.input) {
    const raw = await decodeInputRaw(job.input, bw, bh);
    signal.throwIfAborted();
    base = sharp(raw, { raw: { width: bw, height: bh, channels: 3 } }).composite([
      { input: Buffer.from(compositionSvg(job.digest, job.palette, bw, bh, { mode: 'overlay' })) },
    ]);
  } else {
    base = sharp(Buffer.from(compositionSvg(job.digest, job.palette, bw, bh, { mode: 'full' })));
  }
  const background = await base.removeAlpha().raw().toBuffer();
  signal.throwIfAborted();

  const caption = captionSvg(job.prompt, w, h);
  const captionLayer = caption ? await rasterize(caption.svg) : undefined;
  const size = Math.max(16, Math.round(Math.min(w, h) * 0.22));
  const subject = await rasterize(subjectSvg(job.palette, size));
  signal.throwIfAborted();

  // The subject's path: a Lissajous figure with integer frequencies (so it loops), above the caption.
  const rng = rngFrom(job.digest, 3);
  const fx = rng.int(1, 2);
  const fy = rng.int(1, 2);
  const phase = rng.range(0, Math.PI * 2);
  const areaH = h - (captionLayer?.height ?? 0);
  const ax = Math.max(0, w / 2 - size / 2 - 4);
  const ay = Math.max(0, areaH / 2 - size / 2 - 4);
  // The camera's drift direction.
  const panAngle = rng.range(0, Math.PI * 2);

  const frame = async (i: number): Promise<Buffer> => {
    const t = i / frames;
    // 0 → 1 → 0 over the loop.
    const p = (1 - Math.cos(2 * Math.PI * t)) / 2;
    let pipeline = sharp(background, { raw: { width: bw, height: bh, channels: 3 } });
    if (job.cameraFixed) {
      pipeline = pipeline.extract({
        left: Math.floor((bw - w) / 2),
        top: Math.floor((bh - h) / 2),
        width: w,
        height: h,
      });
    } else {
      // Window from the whole background (zoomed out) to frame size (zoomed in), drifting.
      const ww = Math.round(bw - (bw - w) * p);
      const wh = Math.min(bh, Math.round((ww * h) / w));
      const cx = bw / 2 + Math.cos(panAngle) * (bw - ww) * 0.5 * p;
      const cy = bh / 2 + Math.sin(panAngle) * (bh - wh) * 0.5 * p;
      const left = Math.max(0, Math.min(bw - ww, Math.round(cx - ww / 2)));
      const top = Math.max(0, Math.min(bh - wh, Math.round(cy - wh / 2)));
      pipeline = pipeline.extract({ left, top, width: ww, height: wh });
      if (ww !== w || wh !== h) pipeline = pipeline.resize(w, h, { fit: 'fill' });
    }
    const sx = Math.round(w / 2 + ax * Math.sin(2 * Math.PI * fx * t + phase) - size / 2);
    const sy = Math.round(areaH / 2 + ay * Math.sin(2 * Math.PI * fy * t) - size / 2);
    const layers: OverlayOptions[] = [
      {
        input: subject.data,
        raw: { width: subject.width, height: subject.height, channels: 4 },
        left: Math.max(0, Math.min(w - size, sx)),
        top: Math.max(0, Math.min(h - size, sy)),
      },
    ];
    if (captionLayer) {
      layers.push({
        input: captionLayer.data,
        raw: { width: captionLayer.width, height: captionLayer.height, channels: 4 },
        left: 0,
        top: h - captionLayer.height,
      });
    }
    const composed = pipeline.composite(layers);
    // MP4: raw RGBA for the encoder. WebP: opaque frames, a plain VP8 bitstream each, no ALPH chunk.
    return mp4
      ? composed.ensureAlpha().raw().toBuffer()
      : composed.removeAlpha().webp({ quality: 75, effort: 1 }).toBuffer();
  };

  const encoder = mp4 ? mp4Encoder(w, h, VIDEO_FPS) : null;
  try {
    const encoded: (Buffer | undefined)[] = new Array(frames);
    let fed = 0;
    const parallel = Math.max(1, job.parallel ?? 2);
    let next = 0;
    const worker = async () => {
      while (next < frames) {
        signal.throwIfAborted();
        const i = next++;
        encoded[i] = await frame(i);
        // The encoder takes frames in order, each as soon as those before it are in: memory holds
        // only the few rendered out of order, not the clip.
        for (let f = encoded[fed]; encoder && f; f = encoded[fed]) {
          encoder.add(f);
          encoded[fed++] = undefined;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, frames) }, worker));
    signal.throwIfAborted();
    if (encoder) return await encoder.finish();
    return assembleAnimatedWebp(encoded as Buffer[], w, h, Math.round(1000 / VIDEO_FPS));
  } finally {
    encoder?.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// The animated WebP container (https://developers.google.com/speed/webp/docs/riff_container)

function chunk(fourcc: string, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.write(fourcc, 0, 'ascii');
  header.writeUInt32LE(payload.length, 4);
  const pad = payload.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0);
  return Buffer.concat([header, payload, pad]);
}

function uint24(buf: Buffer, offset: number, value: number): void {
  buf.writeUIntLE(value, offset, 3);
}

/** The image chunks (ALPH/VP8/VP8L) of a still WebP file, which go into an ANMF frame as they are. */
export function webpImageChunks(file: Buffer): Buffer {
  if (
    file.length < 12 ||
    file.toString('ascii', 0, 4) !== 'RIFF' ||
    file.toString('ascii', 8, 12) !== 'WEBP'
  ) {
    throw new Error('not a WebP file');
  }
  const out: Buffer[] = [];
  let offset = 12;
  while (offset + 8 <= file.length) {
    const fourcc = file.toString('ascii', offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    const end = offset + 8 + size + (size % 2);
    if (fourcc === 'ALPH' || fourcc === 'VP8 ' || fourcc === 'VP8L') out.push(file.subarray(offset, end));
    offset = end;
  }
  if (out.length === 0) throw new Error('WebP file without image data');
  return Buffer.concat(out);
}

/** Packs still WebP frames (all `w`×`h`) into a looping animated WebP with `delayMs` per frame. */
export function assembleAnimatedWebp(frames: Buffer[], w: number, h: number, delayMs: number): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x.writeUInt8(0x02, 0); // animation flag (frames are opaque: no alpha flag)
  uint24(vp8x, 4, w - 1);
  uint24(vp8x, 7, h - 1);
  const anim = Buffer.alloc(6);
  anim.writeUInt32LE(0xff000000, 0); // background colour (BGRA): opaque black
  anim.writeUInt16LE(0, 4); // loop forever
  const body: Buffer[] = [Buffer.from('WEBP', 'ascii'), chunk('VP8X', vp8x), chunk('ANIM', anim)];
  for (const frame of frames) {
    const header = Buffer.alloc(16);
    uint24(header, 0, 0); // x / 2
    uint24(header, 3, 0); // y / 2
    uint24(header, 6, w - 1);
    uint24(header, 9, h - 1);
    uint24(header, 12, delayMs);
    header.writeUInt8(0x02, 15); // no blending, no disposal
    body.push(chunk('ANMF', Buffer.concat([header, webpImageChunks(frame)])));
  }
  const payload = Buffer.concat(body);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'ascii');
  riff.writeUInt32LE(payload.length, 4);
  return Buffer.concat([riff, payload]);
}
