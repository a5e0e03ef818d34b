import { describe, expect, it } from 'vitest';
import { mediaFailure } from '../../test/support/media-errors.js';
import { DEFAULT_ROUTES } from './config.js';
import type { MediaRoute } from './types.js';
import { isHttpUrl, isImageUrl, validateGeneration } from './validate.js';

const route = (kind: string, name: string) =>
  DEFAULT_ROUTES.find((r) => r.kind === kind && r.name === name) as MediaRoute;
const t2iA = route('t2i', 'model-a');
const t2iB = route('t2i', 'model-b');
const i2iA = route('i2i', 'model-a');
const i2iB = route('i2i', 'model-b');
const video = route('video', 'video-model');

const failure = mediaFailure;

describe('validateGeneration', () => {
  it('applies defaults and keeps the prompt as given', () => {
    expect(validateGeneration(t2iB, { prompt: ' a cat ' })).toEqual({
      prompt: ' a cat ',
      params: { size: '1K', aspect_ratio: '1:1' },
      imageUrls: [],
    });
    expect(validateGeneration(video, { prompt: 'x' }).params).toEqual({
      duration: 3,
      resolution: '480p',
      camera_fixed: false,
      output_format: 'webp',
    });
  });

  it('treats null as absent in JSON', () => {
    expect(validateGeneration(t2iA, { prompt: 'x', output_format: null }).params).toEqual({
      output_format: 'png',
    });
  });

  it('parses form strings: integers, booleans, repeated fields and JSON arrays; blank fields are absent', () => {
    const v = validateGeneration(
      video,
      {
        prompt: 'x',
        duration: '5',
        camera_fixed: 'TRUE',
        resolution: '',
        reference_images: ['http://a.example/1.png', 'https://b.example/2.jpg'],
      },
      { form: true },
    );
    expect(v.params).toEqual({
      duration: 5,
      camera_fixed: true,
      resolution: '480p',
      output_format: 'webp',
      reference_images: ['http://a.example/1.png', 'https://b.example/2.jpg'],
    });
    expect(v.imageUrls).toEqual([
      { param: 'reference_images', url: 'http://a.example/1.png' },
      { param: 'reference_images', url: 'https://b.example/2.jpg' },
    ]);
    expect(
      validateGeneration(i2iA, { prompt: 'x', image_input: '["http://a.example/1.png"]' }, { form: true })
        .imageUrls,
    ).toEqual([{ param: 'image_input', url: 'http://a.example/1.png' }]);
    expect(
      validateGeneration(i2iA, { prompt: 'x', image_input: 'http://a.example/1.png' }, { form: true }).params,
    ).toEqual({ image_input: ['http://a.example/1.png'] });
    expect(
      validateGeneration(video, { prompt: 'x', camera_fixed: '0' }, { form: true }).params.camera_fixed,
    ).toBe(false);
  });

  it('does not parse strings in JSON', () => {
    expect(failure(() => validateGeneration(video, { prompt: 'x', duration: '3' }))).toEqual({
      status: 400,
      code: 'invalid_type',
      field: 'duration',
    });
    expect(failure(() => validateGeneration(video, { prompt: 'x', camera_fixed: 'true' })).code).toBe(
      'invalid_type',
    );
    expect(failure(() => validateGeneration(video, { prompt: 'x', duration: 3.5 })).code).toBe(
      'invalid_type',
    );
  });

  it('an uploaded image file satisfies requiresImage; a file and a URL for the same parameter do not mix', () => {
    expect(validateGeneration(i2iB, { prompt: 'x' }, { form: true, files: ['image'] })).toEqual({
      prompt: 'x',
      params: { size: '1K' },
      imageUrls: [],
    });
    expect(
      failure(() =>
        validateGeneration(
          i2iB,
          { prompt: 'x', image: 'http://a.example/1.png' },
          { form: true, files: ['image'] },
        ),
      ),
    ).toMatchObject({ code: 'invalid_value', field: 'image' });
    expect(
      failure(() => validateGeneration(t2iA, { prompt: 'x' }, { form: true, files: ['image'] })),
    ).toMatchObject({
      code: 'unknown_parameter',
      field: 'image',
    });
    expect(
      failure(() => validateGeneration(i2iA, { prompt: 'x' }, { form: true, files: ['image_input'] })),
    ).toMatchObject({ code: 'invalid_type', field: 'image_input' });
  });

  it('a mask edits an input image: it needs one beside it and does not count as one', () => {
    expect(
      validateGeneration(
        i2iB,
        { prompt: 'x', mask: 'https://a.example/m.png' },
        { form: true, files: ['image'] },
      ),
    ).toEqual({
      prompt: 'x',
      params: { mask: 'https://a.example/m.png', size: '1K' },
      imageUrls: [{ param: 'mask', url: 'https://a.example/m.png' }],
    });
    expect(
      validateGeneration(i2iB, { prompt: 'x' }, { form: true, files: ['image', 'mask'] }).imageUrls,
    ).toEqual([]);
    for (const alone of [
      () => validateGeneration(i2iB, { prompt: 'x' }, { form: true, files: ['mask'] }),
      () => validateGeneration(i2iB, { prompt: 'x', mask: 'https://a.example/m.png' }),
    ])
      expect(failure(alone)).toMatchObject({ code: 'missing_parameter', field: 'mask' });
    // A route without one refuses it by name.
    expect(
      failure(() =>
        validateGeneration(i2iA, { prompt: 'x', image_input: ['https://a.example/1.png'], mask: 'm' }),
      ),
    ).toMatchObject({ code: 'unknown_parameter', field: 'mask' });
  });

  it('a URL image satisfies requiresImage and is listed for fetching', () => {
    const v = validateGeneration(i2iB, { prompt: 'x', image: 'https://a.example/1.webp' });
    expect(v.imageUrls).toEqual([{ param: 'image', url: 'https://a.example/1.webp' }]);
  });

  it.each([
    [t2iA, { prompt: 'x', nope: true }, 'unknown_parameter', 'nope'],
    [t2iA, { prompt: 'x', __proto__x: 1 }, 'unknown_parameter', '__proto__x'],
    [t2iA, {}, 'missing_parameter', 'prompt'],
    [t2iA, { prompt: '' }, 'missing_parameter', 'prompt'],
    [t2iA, { prompt: ['a'] }, 'invalid_type', 'prompt'],
    [t2iA, { prompt: 'x'.repeat(4001) }, 'invalid_value', 'prompt'],
    [t2iA, { prompt: 'x', output_format: 'PNG' }, 'invalid_value', 'output_format'],
    [t2iB, { prompt: 'x', size: ['1K'] }, 'invalid_type', 'size'],
    [i2iA, { prompt: 'x' }, 'missing_parameter', 'image_input'],
    [i2iA, { prompt: 'x', image_input: [1] }, 'invalid_type', 'image_input'],
    [i2iA, { prompt: 'x', image_input: ['javascript:alert(1)'] }, 'invalid_value', 'image_input'],
    [i2iB, { prompt: 'x', image_input: [] }, 'invalid_value', 'image_input'],
    [i2iB, { prompt: 'x' }, 'missing_parameter', 'image_input'],
    [video, { prompt: 'x', duration: 1 }, 'invalid_value', 'duration'],
    [video, { prompt: 'x', image: 42 }, 'invalid_type', 'image'],
    [video, { prompt: 'x', image: ['http://a.example/1.png'] }, 'invalid_type', 'image'],
  ] as [MediaRoute, Record<string, unknown>, string, string][])('%#: %j → %s %s', (r, body, code, field) => {
    expect(failure(() => validateGeneration(r, body))).toEqual({ status: 400, code, field });
  });

  it('checks integer bounds of configured routes', () => {
    const r: MediaRoute = {
      kind: 't2i',
      name: 'custom',
      provider: 'local',
      providerModel: 'custom',
      params: { steps: { type: 'integer', min: 1, max: 50, required: true }, seed: { type: 'integer' } },
    };
    expect(validateGeneration(r, { prompt: 'x', steps: 50, seed: -3 }).params).toEqual({
      steps: 50,
      seed: -3,
    });
    expect(failure(() => validateGeneration(r, { prompt: 'x', steps: 51 }))).toMatchObject({
      code: 'invalid_value',
      field: 'steps',
    });
    expect(failure(() => validateGeneration(r, { prompt: 'x' }))).toMatchObject({
      code: 'missing_parameter',
      field: 'steps',
    });
  });
});

describe('isHttpUrl', () => {
  it('accepts only absolute http(s) URLs', () => {
    expect(isHttpUrl('http://a.example/x.png')).toBe(true);
    expect(isHttpUrl('https://[::1]:8080/x')).toBe(true);
    for (const u of [
      'ftp://a/x',
      'file:///etc/passwd',
      'data:image/png;base64,AAAA',
      '/relative',
      'http//x',
      '',
    ])
      expect(isHttpUrl(u), u).toBe(false);
  });
});

describe('isImageUrl', () => {
  it('accepts http(s) URLs and base64 data: URLs, nothing else', () => {
    for (const u of ['https://a.example/x.png', 'data:image/png;base64,AAAA', 'DATA:;base64,AA'])
      expect(isImageUrl(u), u).toBe(true);
    for (const u of ['data:image/png,%89PNG', 'data:text/plain;charset=utf-8,hi', 'file:///etc/passwd', ''])
      expect(isImageUrl(u), u).toBe(false);
  });
});
