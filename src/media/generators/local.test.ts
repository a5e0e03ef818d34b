import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GenerateRequest, type InputImage, MediaError } from '../types.js';
import { LocalGenerator } from './local.js';
import { captionLines, escapeXml, imageDimensions } from './local-image.js';
import { mp4Encoder } from './local-mp4.js';
import { paletteFor, promptDigest } from './local-palette.js';
import { assembleAnimatedWebp, frameCount, VIDEO_FPS, videoDimensions } from './local-video.js';

const gen = new LocalGenerator();
const live = () => new AbortController().signal;

function request(
  kind: GenerateRequest['kind'],
  prompt: string,
  params: GenerateRequest['params'] = {},
  images: InputImage[] = [],
): GenerateRequest {
  return { kind, route: 'model-x', providerModel: 'local', prompt, params, images };
}

let dir: string;
const inputs: Record<string, InputImage> = {};

async function writeInput(
  name: string,
  data: Buffer,
  contentType: string,
  param = 'image',
): Promise<InputImage> {
  const path = join(dir, name);
  await writeFile(path, data);
  return { path, contentType, bytes: data.length, param };
}

const solid = (width: number, height: number, background: string) =>
  sharp({ create: { width, height, channels: 3, background } });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-local-gen-'));
  inputs.red = await writeInput('red.png', await solid(600, 400, '#d02020').png().toBuffer(), 'image/png');
  inputs.blue = await writeInput(
    'blue.jpg',
    await solid(600, 400, '#2030d0').jpeg().toBuffer(),
    'image/jpeg',
  );
  inputs.greenTall = await writeInput(
    'green.webp',
    await solid(300, 600, '#20c040').webp().toBuffer(),
    'image/webp',
    'image_input',
  );
  inputs.text = await writeInput(
    'notes.png',
    Buffer.from('this is not an image at all\n'),
    'image/png',
    'image_input',
  );
  const png = await solid(400, 400, '#ff0000').png().toBuffer();
  inputs.truncated = await writeInput('cut.png', png.subarray(0, Math.floor(png.length / 2)), 'image/png');
  inputs.svg = await writeInput(
    'drawing.svg',
    Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
    ),
    'image/png',
    'reference_images',
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Mean R, G, B of an encoded image (first frame). */
async function meanColour(data: Buffer): Promise<[number, number, number]> {
  const stats = await sharp(data).removeAlpha().stats();
  return [stats.channels[0]?.mean ?? 0, stats.channels[1]?.mean ?? 0, stats.channels[2]?.mean ?? 0];
}

/** Mean absolute per-channel difference between two same-size images, 0–255. */
async function difference(a: Buffer, b: Buffer): Promise<number> {
  const ra = await sharp(a).removeAlpha().raw().toBuffer();
  const rb = await sharp(b).removeAlpha().raw().toBuffer();
  expect(ra.length).toBe(rb.length);
  let sum = 0;
  for (let i = 0; i < ra.length; i++) sum += Math.abs((ra[i] ?? 0) - (rb[i] ?? 0));
  return sum / ra.length;
}

async function only(req: GenerateRequest, signal = live()) {
  const outputs = await gen.generate(req, signal);
  expect(outputs).toHaveLength(1);
  const [out] = outputs;
  if (!out) throw new Error('no output');
  return out;
}

describe('sizes', () => {
  it.each([
    [undefined, undefined, 1024, 1024],
    ['1K', '1:1', 1024, 1024],
    ['1K', '16:9', 1024, 576],
    ['1K', '9:16', 576, 1024],
    ['1K', '4:3', 1024, 768],
    ['1K', '3:4', 768, 1024],
    ['1K', '3:2', 1024, 680],
    ['1K', '2:3', 680, 1024],
    ['1K', '21:9', 1024, 440],
    ['2K', '1:1', 2048, 2048],
    ['2K', '16:9', 2048, 1152],
    ['2K', '9:16', 1152, 2048],
    ['2K', '4:3', 2048, 1536],
    ['1024x768', undefined, 1024, 768],
  ])('size %s aspect %s → %i×%i', (size, aspect, width, height) => {
    expect(imageDimensions(size, aspect)).toEqual({ width, height });
  });

  it('falls back to the input aspect ratio, then square', () => {
    expect(imageDimensions('1K', undefined, 600 / 400)).toEqual({ width: 1024, height: 680 });
    expect(imageDimensions('2K', 'auto', 0.5)).toEqual({ width: 1024, height: 2048 });
    expect(imageDimensions('1K', 'nonsense')).toEqual({ width: 1024, height: 1024 });
  });

  it('video resolutions are 16:9 landscape; frames are duration × fps', () => {
    expect(videoDimensions('480p')).toEqual({ width: 854, height: 480 });
    expect(videoDimensions('720p')).toEqual({ width: 1280, height: 720 });
    expect(videoDimensions('1080p')).toEqual({ width: 1920, height: 1080 });
    expect(videoDimensions(undefined)).toEqual({ width: 1280, height: 720 });
    expect(frameCount(3)).toBe(3 * VIDEO_FPS);
    expect(frameCount(5)).toBe(5 * VIDEO_FPS);
  });
});

describe('text to image', () => {
  it.each([
    ['png', 'image/png', 'png'],
    ['jpeg', 'image/jpeg', 'jpg'],
    ['webp', 'image/webp', 'webp'],
  ])('output_format %s → a decodable %s at 1024×1024 (model-a default)', async (format, contentType, extension) => {
    const out = await only(request('t2i', 'A lighthouse on a cliff', { output_format: format }));
    expect(out.contentType).toBe(contentType);
    expect(out.extension).toBe(extension);
    const meta = await sharp(out.data).metadata();
    expect(meta.format).toBe(format);
    expect([meta.width, meta.height]).toEqual([1024, 1024]);
    expect(meta.hasAlpha).toBe(false);
  });

  it('defaults to PNG', async () => {
    const out = await only(request('t2i', 'no format given'));
    expect(out.contentType).toBe('image/png');
    expect((await sharp(out.data).metadata()).format).toBe('png');
  });

  it.each([
    ['1K', '16:9', 1024, 576],
    ['1K', '9:16', 576, 1024],
    ['2K', '1:1', 2048, 2048],
    ['2K', '4:3', 2048, 1536],
  ])('model-b size %s aspect_ratio %s → %i×%i', async (size, aspect_ratio, width, height) => {
    const out = await only(request('t2i', 'mountains', { size, aspect_ratio }));
    const meta = await sharp(out.data).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', width, height]);
  });

  it('is deterministic: same prompt → identical bytes, in every format', async () => {
    for (const output_format of ['png', 'jpeg', 'webp']) {
      const a = await only(request('t2i', 'a quiet harbour at dusk', { output_format }));
      const b = await only(request('t2i', 'a quiet harbour at dusk', { output_format }));
      expect(a.data.equals(b.data)).toBe(true);
    }
  });

  it('a different prompt gives a visibly different picture', async () => {
    const a = await only(request('t2i', 'a quiet harbour at dusk'));
    const b = await only(request('t2i', 'a quiet harbour at dawn'));
    expect(a.data.equals(b.data)).toBe(false);
    expect(await difference(a.data, b.data)).toBeGreaterThan(20);
  });

  it('a colour word in the prompt sets the palette', async () => {
    expect(paletteFor('a big blue whale', promptDigest('a big blue whale')).hue).toBe(220);
    const red = await meanColour((await only(request('t2i', 'red'))).data);
    const blue = await meanColour((await only(request('t2i', 'blue'))).data);
    expect(red).not.toEqual(blue);
  });

  it('draws prompts with markup, quotes, control characters and emoji safely', async () => {
    const prompt = `<svg onload="x">&amp; 'quotes' "double" \u0000\u0007 tab\there 🦊 ${'long '.repeat(40)}`;
    const out = await only(request('t2i', prompt, { output_format: 'png' }));
    expect((await sharp(out.data).metadata()).width).toBe(1024);
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
    const lines = captionLines(prompt);
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(Array.from(lines.join(' ')).some((ch) => (ch.codePointAt(0) ?? 0) < 0x20)).toBe(false);
    expect(lines.join(' ').endsWith('…')).toBe(true);
  });
});

describe('image to image', () => {
  it('keeps the input recognizable: a red input stays reddish, a blue one bluish', async () => {
    const prompt = 'make it look like a watercolour painting';
    const fromRed = await only(request('i2i', prompt, { size: '1K' }, [inputs.red as InputImage]));
    const fromBlue = await only(request('i2i', prompt, { size: '1K' }, [inputs.blue as InputImage]));
    const [rr, , rb] = await meanColour(fromRed.data);
    const [br, , bb] = await meanColour(fromBlue.data);
    expect(rr).toBeGreaterThan(rb + 40);
    expect(bb).toBeGreaterThan(br + 40);
    // Same prompt, different input: the input shows through, the prompt's overlay is shared.
    expect(await difference(fromRed.data, fromBlue.data)).toBeGreaterThan(40);
  });

  it('takes the input aspect ratio unless aspect_ratio is given; size sets the long side', async () => {
    const landscape = await only(request('i2i', 'x', { size: '1K' }, [inputs.red as InputImage]));
    expect(await sharp(landscape.data).metadata()).toMatchObject({ width: 1024, height: 680 });
    const tall = await only(request('i2i', 'x', { size: '2K' }, [inputs.greenTall as InputImage]));
    expect(await sharp(tall.data).metadata()).toMatchObject({ width: 1024, height: 2048 });
    const square = await only(
      request('i2i', 'x', { size: '1K', aspect_ratio: '1:1', output_format: 'jpeg' }, [
        inputs.red as InputImage,
      ]),
    );
    expect(await sharp(square.data).metadata()).toMatchObject({ format: 'jpeg', width: 1024, height: 1024 });
  });

  it('is deterministic for the same prompt and input, and follows the prompt', async () => {
    const a = await only(request('i2i', 'sketch', {}, [inputs.blue as InputImage]));
    const b = await only(request('i2i', 'sketch', {}, [inputs.blue as InputImage]));
    const c = await only(request('i2i', 'oil painting', {}, [inputs.blue as InputImage]));
    expect(a.data.equals(b.data)).toBe(true);
    expect(a.data.equals(c.data)).toBe(false);
  });

  it('uses several inputs (model-a): the first as background, the others as thumbnails', async () => {
    const one = await only(request('i2i', 'collage', {}, [inputs.red as InputImage]));
    const two = await only(
      request('i2i', 'collage', {}, [inputs.red as InputImage, inputs.greenTall as InputImage]),
    );
    const [r1, g1] = await meanColour(one.data);
    const [r2, g2] = await meanColour(two.data);
    expect(g2).toBeGreaterThan(g1);
    expect(r2).toBeLessThan(r1);
  });

  it('with a mask, only its transparent area changes; elsewhere the input stays as it was', async () => {
    // Left half opaque (kept), right half transparent (edited): OpenAI's convention.
    const alpha = Buffer.alloc(600 * 400);
    for (let y = 0; y < 400; y++) alpha.fill(255, y * 600, y * 600 + 300);
    const maskPng = await sharp({ create: { width: 600, height: 400, channels: 3, background: '#000' } })
      .joinChannel(alpha, { raw: { width: 600, height: 400, channels: 1 } })
      .png()
      .toBuffer();
    const mask = await writeInput('mask.png', maskPng, 'image/png', 'mask');
    const out = await only(request('i2i', 'a bright sun', { size: '1K' }, [inputs.red as InputImage, mask]));
    const { data, info } = await sharp(out.data).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([1024, 680]);
    const meanOf = (x0: number, x1: number) => {
      const sum = [0, 0, 0];
      for (let y = 0; y < info.height; y++)
        for (let x = x0; x < x1; x++)
          for (let c = 0; c < 3; c++) sum[c] = (sum[c] ?? 0) + (data[(y * info.width + x) * 3 + c] ?? 0);
      return sum.map((v) => v / ((x1 - x0) * info.height));
    };
    // The kept half is the input's red exactly (a few pixels from the edge, past resampling).
    const kept = meanOf(0, 500);
    expect(kept[0]).toBeCloseTo(0xd0, 0);
    expect(kept[1]).toBeCloseTo(0x20, 0);
    expect(kept[2]).toBeCloseTo(0x20, 0);
    // The edited half is drawn over: not the plain input.
    const edited = meanOf(530, 1024);
    expect(Math.abs((edited[1] ?? 0) - 0x20) + Math.abs((edited[2] ?? 0) - 0x20)).toBeGreaterThan(20);
    // Without the mask the whole picture changes.
    const whole = await only(request('i2i', 'a bright sun', { size: '1K' }, [inputs.red as InputImage]));
    expect(out.data.equals(whole.data)).toBe(false);
    // A mask without an alpha channel says nothing about where: a 400 naming it.
    const flat = await writeInput(
      'flat-mask.png',
      await solid(600, 400, '#000').png().toBuffer(),
      'image/png',
      'mask',
    );
    await expect(
      gen.generate(request('i2i', 'x', {}, [inputs.red as InputImage, flat]), live()),
    ).rejects.toMatchObject({
      status: 400,
      code: 'invalid_image',
      field: 'mask',
    });
  });

  it.each([
    ['text bytes', 'text', 'image_input'],
    ['a truncated PNG', 'truncated', 'image'],
    ['an SVG', 'svg', 'reference_images'],
  ])('refuses %s with MediaError 400 invalid_image naming the parameter', async (_what, key, field) => {
    const err = await gen
      .generate(request('i2i', 'x', {}, [inputs.red as InputImage, inputs[key] as InputImage]), live())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MediaError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_image', field });
  });

  it('refuses a missing file as invalid_image', async () => {
    const missing: InputImage = {
      path: join(dir, 'gone.png'),
      contentType: 'image/png',
      bytes: 1,
      param: 'image',
    };
    await expect(gen.generate(request('i2i', 'x', {}, [missing]), live())).rejects.toMatchObject({
      status: 400,
      code: 'invalid_image',
    });
  });
});

describe('video', () => {
  it('3 s at 480p → an animated WebP of 24 frames at 854×480', async () => {
    const out = await only(request('video', 'a paper boat on a river', { duration: 3, resolution: '480p' }));
    expect(out.contentType).toBe('image/webp');
    expect(out.extension).toBe('webp');
    const meta = await sharp(out.data, { pages: -1 }).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.pages).toBe(3 * VIDEO_FPS);
    expect(meta.width).toBe(854);
    expect(meta.pageHeight).toBe(480);
    expect(meta.loop).toBe(0);
    expect(meta.delay).toHaveLength(24);
    expect(meta.delay?.every((d) => d === 125)).toBe(true);
    // It moves: frames differ.
    const first = await sharp(out.data, { page: 0 }).png().toBuffer();
    const middle = await sharp(out.data, { page: 12 }).png().toBuffer();
    expect(await difference(first, middle)).toBeGreaterThan(5);
  });

  it('5 s at 720p → 40 frames at 1280×720; deterministic', async () => {
    const req = request('video', 'city lights', { duration: 5, resolution: '720p', camera_fixed: false });
    const a = await only(req);
    const meta = await sharp(a.data, { pages: -1 }).metadata();
    expect([meta.pages, meta.width, meta.pageHeight]).toEqual([40, 1280, 720]);
    const b = await only(req);
    expect(a.data.equals(b.data)).toBe(true);
  });

  it('animates over the input image (it stays recognizable), with a fixed camera too', async () => {
    for (const camera_fixed of [false, true]) {
      const out = await only(
        request('video', 'a drifting light', { duration: 2, resolution: '480p', camera_fixed }, [
          inputs.red as InputImage,
        ]),
      );
      const meta = await sharp(out.data, { pages: -1 }).metadata();
      expect([meta.pages, meta.width, meta.pageHeight]).toEqual([16, 854, 480]);
      const [r, , b] = await meanColour(await sharp(out.data, { page: 5 }).png().toBuffer());
      expect(r).toBeGreaterThan(b + 40);
    }
  });

  it('an invalid image input is a 400 invalid_image', async () => {
    await expect(
      gen.generate(
        request('video', 'x', { duration: 2, resolution: '480p' }, [inputs.truncated as InputImage]),
        live(),
      ),
    ).rejects.toMatchObject({ status: 400, code: 'invalid_image', field: 'image' });
  });

  it('output_format mp4 → an H.264 MP4 of duration × fps frames at the resolution; deterministic', async () => {
    const req = request('video', 'a paper boat on a river', {
      duration: 2,
      resolution: '480p',
      output_format: 'mp4',
    });
    const out = await only(req);
    expect([out.contentType, out.extension]).toEqual(['video/mp4', 'mp4']);
    const top = mp4Boxes(out.data);
    expect(top.map((b) => b.type)).toEqual(expect.arrayContaining(['ftyp', 'moov', 'mdat']));
    const moov = mp4Boxes(box(top, 'moov'));
    const mvhd = box(moov, 'mvhd');
    expect(mvhd.readUInt32BE(16) / mvhd.readUInt32BE(12)).toBeCloseTo(2, 1); // duration ÷ timescale
    const trak = mp4Boxes(box(moov, 'trak'));
    const tkhd = box(trak, 'tkhd');
    expect([tkhd.readUInt32BE(76) >> 16, tkhd.readUInt32BE(80) >> 16]).toEqual([854, 480]);
    const stbl = mp4Boxes(box(mp4Boxes(box(mp4Boxes(box(trak, 'mdia')), 'minf')), 'stbl'));
    expect(box(stbl, 'stsz').readUInt32BE(8)).toBe(2 * VIDEO_FPS); // samples: one per frame
    expect(mp4Boxes(box(stbl, 'stsd').subarray(8)).map((b) => b.type)).toEqual(['avc1']);
    // The same pictures (the headers carry the time of muxing).
    expect(box(mp4Boxes((await only(req)).data), 'mdat').equals(box(top, 'mdat'))).toBe(true);
  });

  it('packs frames into a valid animated WebP container', async () => {
    const frames = await Promise.all(
      ['#ff0000', '#00ff00', '#0000ff'].map((c) => solid(64, 32, c).webp({ quality: 90 }).toBuffer()),
    );
    const anim = assembleAnimatedWebp(frames, 64, 32, 200);
    const meta = await sharp(anim, { pages: -1 }).metadata();
    expect([meta.pages, meta.width, meta.pageHeight, meta.delay]).toEqual([3, 64, 32, [200, 200, 200]]);
    const [r, g, b] = await meanColour(await sharp(anim, { page: 1 }).png().toBuffer());
    expect(g).toBeGreaterThan(200);
    expect(r + b).toBeLessThan(60);
  });
});

/** An MP4 (ISO BMFF) box list: each box's type and its payload. */
function mp4Boxes(data: Buffer): { type: string; data: Buffer }[] {
  const out: { type: string; data: Buffer }[] = [];
  for (let at = 0; at + 8 <= data.length; ) {
    const size = data.readUInt32BE(at);
    if (size < 8 || at + size > data.length) throw new Error(`bad box size ${size} at ${at}`);
    out.push({ type: data.toString('latin1', at + 4, at + 8), data: data.subarray(at + 8, at + size) });
    at += size;
  }
  return out;
}
const box = (list: { type: string; data: Buffer }[], type: string): Buffer => {
  const found = list.find((b) => b.type === type);
  if (!found) throw new Error(`no ${type} box among ${list.map((b) => b.type).join(', ')}`);
  return found.data;
};

describe('abort', () => {
  it('an already aborted signal rejects with its reason', async () => {
    const controller = new AbortController();
    const reason = new Error('client went away');
    controller.abort(reason);
    await expect(gen.generate(request('t2i', 'x'), controller.signal)).rejects.toBe(reason);
  });

  it('aborting during a video stops between frames and rejects with the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('timed out');
    const started = performance.now();
    const pending = gen.generate(
      request('video', 'long one', { duration: 10, resolution: '720p' }),
      controller.signal,
    );
    setTimeout(() => controller.abort(reason), 150);
    await expect(pending).rejects.toBe(reason);
    // A full 10 s 720p clip takes seconds; the abort lands within a frame or two.
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it('aborting an MP4 rejects with the reason; a stopped encoder never answers a finish', async () => {
    const encoder = mp4Encoder(64, 32, 8);
    encoder.add(new Uint8Array(64 * 32 * 4));
    encoder.abort();
    await expect(encoder.finish()).rejects.toThrow(/stopped before the clip was finished/);
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const pending = gen.generate(
      request('video', 'long one', { duration: 10, resolution: '720p', output_format: 'mp4' }),
      controller.signal,
    );
    setTimeout(() => controller.abort(reason), 150);
    await expect(pending).rejects.toBe(reason);
  });
});
