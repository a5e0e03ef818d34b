import { describe, expect, it } from 'vitest';
import { mediaFailure } from '../../../test/support/media-errors.js';
import { DEFAULT_ROUTES } from '../config.js';
import type { MediaRoute } from '../types.js';
import { imageCall, nearestRatio, openAiEditCall, openAiImageCall } from './images.js';

const routes = DEFAULT_ROUTES;
const failure = mediaFailure;

describe('imageCall (OpenRouter image API)', () => {
  it('names a route by media/<name> or <name>: text-to-image, or image-to-image with input_references', () => {
    expect(imageCall({ model: 'media/model-a', prompt: 'x' }, routes).route).toMatchObject({
      kind: 't2i',
      name: 'model-a',
    });
    expect(imageCall({ model: 'model-b', prompt: 'x' }, routes).route).toMatchObject({
      kind: 't2i',
      name: 'model-b',
    });
    const ref = { type: 'image_url', image_url: { url: 'https://a.example/1.png' } };
    const i2i = imageCall({ model: 'media/model-a', prompt: 'x', input_references: [ref, ref] }, routes);
    expect(i2i.route).toMatchObject({ kind: 'i2i', name: 'model-a' });
    expect(i2i.input).toEqual({
      prompt: 'x',
      image_input: ['https://a.example/1.png', 'https://a.example/1.png'],
    });
    expect(failure(() => imageCall({ model: 'media/video-model', prompt: 'x' }, routes))).toEqual({
      status: 404,
      code: 'not_found',
      field: 'model',
    });
  });

  it('maps sizes: a tier the route takes, WxH as the tier of its long side and the nearest ratio; auto is nothing', () => {
    const b = (extra: object) => imageCall({ model: 'media/model-b', prompt: 'x', ...extra }, routes);
    expect(b({ size: '2K' }).input).toEqual({ prompt: 'x', size: '2K' });
    expect(b({ resolution: '1K', aspect_ratio: '16:9' }).input).toEqual({
      prompt: 'x',
      size: '1K',
      aspect_ratio: '16:9',
    });
    expect(b({ size: '1024x1024' }).input).toEqual({ prompt: 'x', size: '1K', aspect_ratio: '1:1' });
    expect(b({ size: '1792x1024' }).input).toEqual({ prompt: 'x', size: '2K', aspect_ratio: '16:9' });
    // An explicit ratio wins over the one the pixels imply.
    expect(b({ size: '1024x1536', aspect_ratio: '1:1' }).input).toEqual({
      prompt: 'x',
      size: '2K',
      aspect_ratio: '1:1',
    });
    expect(b({ size: 'auto' }).input).toEqual({ prompt: 'x' });
    // A tier the route does not take reaches validation (a 400 naming size there).
    expect(b({ size: '4K' }).input).toEqual({ prompt: 'x', size: '4K' });
    // model-a has neither: both are dropped, `auto` ratios silently.
    const a = imageCall(
      { model: 'media/model-a', prompt: 'x', size: '1024x1024', aspect_ratio: 'auto' },
      routes,
    );
    expect(a.input).toEqual({ prompt: 'x' });
    expect(a.dropped).toEqual(['size']);
  });

  it('passes the route’s own parameters, ignores gateway fields, drops and lists the rest', () => {
    const call = imageCall(
      {
        model: 'media/model-a',
        prompt: 'x',
        output_format: 'webp',
        seed: 3,
        provider: {},
        user: 'u',
        trace: {},
      },
      routes,
    );
    expect(call.input).toEqual({ prompt: 'x', output_format: 'webp' });
    expect(call.dropped).toEqual(['seed']);
  });

  it('checks n, stream, input_references and the body', () => {
    expect(imageCall({ model: 'model-a', prompt: 'x', n: 3, stream: true }, routes)).toMatchObject({
      n: 3,
      stream: true,
    });
    for (const [body, field] of [
      [{ model: 'model-a', prompt: 'x', n: 0 }, 'n'],
      [{ model: 'model-a', prompt: 'x', n: 1.5 }, 'n'],
      [{ model: 'model-a', prompt: 'x', stream: 'yes' }, 'stream'],
      [{ model: 'model-a', prompt: 'x', input_references: 'u' }, 'input_references'],
      [
        { model: 'model-a', prompt: 'x', input_references: [{ type: 'image_url', image_url: 'u' }] },
        'input_references',
      ],
      [{ prompt: 'x' }, 'model'],
      [[1], 'body'],
    ] as const)
      expect(failure(() => imageCall(body, routes)).field, JSON.stringify(body)).toBe(field);
  });

  it('fills a route’s single image parameter with one reference, and refuses more', () => {
    const single: MediaRoute[] = [
      {
        kind: 'i2i',
        name: 'one',
        provider: 'local',
        providerModel: 'm',
        params: { image: { type: 'image' } },
      },
    ];
    const ref = { type: 'image_url', image_url: { url: 'https://a.example/1.png' } };
    expect(imageCall({ model: 'one', prompt: 'x', input_references: [ref] }, single).input).toEqual({
      prompt: 'x',
      image: 'https://a.example/1.png',
    });
    expect(
      failure(() => imageCall({ model: 'one', prompt: 'x', input_references: [ref, ref] }, single)),
    ).toMatchObject({
      code: 'invalid_value',
      field: 'input_references',
    });
  });
});

describe('OpenAI Images API', () => {
  it('generations: response_format url or b64_json; safety_identifier ignored, quality dropped', () => {
    const call = openAiImageCall(
      {
        model: 'media/model-a',
        prompt: 'x',
        response_format: 'url',
        quality: 'high',
        safety_identifier: 's',
      },
      routes,
    );
    expect(call).toMatchObject({ asUrl: true, dropped: ['quality'] });
    expect(openAiImageCall({ model: 'media/model-a', prompt: 'x' }, routes).asUrl).toBe(false);
    expect(
      failure(() => openAiImageCall({ model: 'model-a', prompt: 'x', response_format: 'png' }, routes)).field,
    ).toBe('response_format');
  });

  it('edits: uploads or JSON images make an image-to-image call; form text is typed; a mask where the route takes one', () => {
    const form = openAiEditCall({ model: 'media/model-b', prompt: 'x', n: '2', stream: 'false' }, routes, {
      uploads: 1,
      form: true,
    });
    expect(form).toMatchObject({ n: 2, stream: false, uploadParam: 'image_input' });
    expect(form.route).toMatchObject({ kind: 'i2i', name: 'model-b' });

    const json = openAiEditCall(
      { model: 'media/model-a', prompt: 'x', images: [{ image_url: 'data:image/png;base64,AAAA' }] },
      routes,
      { uploads: 0, form: false },
    );
    expect(json.input).toEqual({ prompt: 'x', image_input: ['data:image/png;base64,AAAA'] });
    expect(json.uploadParam).toBeNull();

    expect(
      failure(() => openAiEditCall({ model: 'model-a', prompt: 'x' }, routes, { uploads: 0, form: false })),
    ).toEqual({
      status: 400,
      code: 'missing_parameter',
      field: 'image',
    });
    // A mask goes to a route that takes one (model-b): a file part fills it, JSON names its URL.
    const masked = openAiEditCall({ model: 'model-b', prompt: 'x' }, routes, {
      uploads: 1,
      form: true,
      maskFile: true,
    });
    expect(masked).toMatchObject({ uploadParam: 'image_input', input: { prompt: 'x' } });
    expect(
      openAiEditCall(
        {
          model: 'model-b',
          prompt: 'x',
          images: [{ image_url: 'https://a.example/1.png' }],
          mask: { image_url: 'https://a.example/m.png' },
        },
        routes,
        { uploads: 0, form: false },
      ).input,
    ).toEqual({ prompt: 'x', image_input: ['https://a.example/1.png'], mask: 'https://a.example/m.png' });
    // Refused, naming it: a route without one, a mask as form text, a JSON mask not {image_url}.
    for (const [body, opts] of [
      [
        { model: 'model-a', prompt: 'x' },
        { uploads: 1, form: true, maskFile: true },
      ],
      [
        { model: 'model-b', prompt: 'x', mask: 'file' },
        { uploads: 1, form: true },
      ],
      [
        {
          model: 'model-b',
          prompt: 'x',
          images: [{ image_url: 'https://a/1.png' }],
          mask: 'https://a/m.png',
        },
        { uploads: 0, form: false },
      ],
    ] as const)
      expect(failure(() => openAiEditCall({ ...body }, routes, opts))).toMatchObject({
        status: 400,
        code: 'invalid_value',
        field: 'mask',
      });
    expect(
      failure(() =>
        openAiEditCall({ model: 'model-a', prompt: 'x', images: [{ file_id: 'f' }] }, routes, {
          uploads: 0,
          form: false,
        }),
      ),
    ).toMatchObject({ field: 'images' });
  });
});

describe('nearestRatio', () => {
  it('picks the listed ratio closest on a log scale', () => {
    const listed = ['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3'];
    expect(nearestRatio(1, listed)).toBe('1:1');
    expect(nearestRatio(1.5, listed)).toBe('3:2');
    expect(nearestRatio(1.75, listed)).toBe('16:9');
    expect(nearestRatio(0.5, listed)).toBe('9:16');
    expect(nearestRatio(10, listed)).toBe('16:9');
  });
});
