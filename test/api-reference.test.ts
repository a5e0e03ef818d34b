/**
 * The API reference: the OpenAPI document names a success answer for every operation and the
 * inference bodies' fields — documentation only, the routes still take and answer what they did —
 * and the Scalar page at /docs loads nothing from another host (in Debian's Chromium; skipped
 * loudly without it).
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium, warnIfNoChromium } from './support/chromium.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';

type Doc = any;

describe('OpenAPI document', () => {
  let gw: TestGateway;
  let doc: Doc;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite');
    doc = await (await fetch(`${gw.url}/api/v1/openapi.json`)).json();
  });
  afterAll(() => gw?.stop());

  /** A schema, its `$ref` followed into the components. */
  const resolve = (schema: Doc): Doc => {
    const ref: string | undefined = schema?.$ref;
    return ref ? doc.components.schemas[ref.replace('#/components/schemas/', '')] : schema;
  };

  it('documents a success answer with its schema for every operation', () => {
    const missing: string[] = [];
    let operations = 0;
    for (const [path, ops] of Object.entries<Doc>(doc.paths))
      for (const [method, op] of Object.entries<Doc>(ops)) {
        operations++;
        // A removed operation kept for its 410 (POST /credits/crypto-charge) has no success.
        if (op.deprecated) continue;
        const success = Object.entries<Doc>(op.responses ?? {}).filter(([code]) => /^2\d\d$/.test(code));
        const described = success.some(
          ([code, r]) =>
            code === '204' ||
            Object.values<Doc>(r.content ?? {}).some((c) => c.schema && Object.keys(c.schema).length > 0),
        );
        if (!described) missing.push(`${method.toUpperCase()} ${path}`);
      }
    expect(operations).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });

  it('describes the inference request bodies and answers with their main fields', () => {
    const cases: [string, string[], string[]][] = [
      [
        '/chat/completions',
        ['model', 'messages'],
        ['stream', 'tools', 'response_format', 'reasoning', 'models', 'provider'],
      ],
      [
        '/responses',
        ['model', 'input'],
        ['instructions', 'previous_response_id', 'conversation', 'store', 'tools', 'provider'],
      ],
      [
        '/messages',
        ['model', 'messages', 'max_tokens'],
        ['system', 'tools', 'thinking', 'stream', 'provider'],
      ],
      ['/messages/count_tokens', ['model', 'messages'], ['system', 'tools']],
      ['/responses/compact', ['model'], ['input', 'instructions', 'previous_response_id', 'provider']],
      ['/responses/input_tokens', ['model'], ['input', 'instructions', 'tools']],
      ['/embeddings', ['model', 'input'], ['dimensions', 'encoding_format']],
      ['/rerank', ['model', 'query', 'documents'], ['top_n', 'provider']],
    ];
    for (const [path, required, optional] of cases) {
      const op = doc.paths[path].post;
      const body = resolve(op.requestBody.content['application/json'].schema);
      expect(body.type, path).toBe('object');
      expect(body.required, path).toEqual(expect.arrayContaining(required));
      expect(Object.keys(body.properties), path).toEqual(expect.arrayContaining([...required, ...optional]));
      // Unknown fields are passed on to providers: the documented body says so.
      expect(body.additionalProperties, path).toBe(true);
      const answer = resolve(op.responses['200'].content['application/json'].schema);
      expect(answer.type, path).toBe('object');
      expect(Object.keys(answer.properties).length, path).toBeGreaterThan(1);
      expect(op.responses['400'], path).toBeDefined();
    }
    expect(
      resolve(doc.paths['/chat/completions'].post.responses['200'].content['application/json'].schema)
        .properties,
    ).toHaveProperty('usage');
    // Streaming answers are server-sent events.
    for (const path of ['/chat/completions', '/responses', '/messages'])
      expect(doc.paths[path].post.responses['200'].content['text/event-stream'], path).toBeDefined();
    // The Responses WebSocket mode (an upgrade, no HTTP operation of its own) is told of there.
    expect(doc.paths['/responses'].post.description).toMatch(/WebSocket upgrade/);
    expect(doc.components.schemas.ProviderPreferences.properties).toHaveProperty('order');
    // Audio: speech answers audio; a transcription takes JSON (base64 audio) or a multipart upload.
    const speech = doc.paths['/audio/speech'].post;
    expect(resolve(speech.requestBody.content['application/json'].schema).required).toEqual(
      expect.arrayContaining(['model', 'input']),
    );
    expect(speech.responses['200'].content['audio/*']).toBeDefined();
    const transcription = doc.paths['/audio/transcriptions'].post;
    expect(Object.keys(transcription.requestBody.content)).toEqual(
      expect.arrayContaining(['application/json', 'multipart/form-data']),
    );
    expect(
      resolve(transcription.responses['200'].content['application/json'].schema).properties,
    ).toHaveProperty('text');
    expect(transcription.responses['200'].content['text/event-stream']).toBeDefined();
    for (const op of [speech, transcription]) expect(op.responses['413']).toBeDefined();
    expect(
      doc.paths['/batches/{id}/results'].get.responses['200'].content['application/jsonl'],
    ).toBeDefined();
    // Anthropic's Message Batches: the batch object, the create body, errors in Anthropic's format.
    const messageBatches = doc.paths['/messages/batches'];
    expect(
      resolve(messageBatches.post.requestBody.content['application/json'].schema).properties,
    ).toHaveProperty('requests');
    expect(
      resolve(messageBatches.post.responses['200'].content['application/json'].schema).properties,
    ).toHaveProperty('processing_status');
    expect(messageBatches.post.responses['400'].content['application/json'].schema.title).toBe(
      'AnthropicError',
    );
    expect(Object.keys(doc.paths['/messages/batches/{id}'])).toEqual(
      expect.arrayContaining(['get', 'delete']),
    );
    expect(
      doc.paths['/messages/batches/{id}/results'].get.responses['200'].content['application/binary'],
    ).toBeDefined();
  });

  it('still takes unknown fields and answers every field: the documented schemas are not enforced', async () => {
    const call = client(gw.url, gw.apiKey);
    // An unknown field and a documented one of the wrong type: no Fastify 400 for either.
    const res = await call('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'still passes' }],
      some_provider_field: { nested: true },
      top_k: 3,
    });
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe('still passes');
    // Fields the documented answer does not name are still sent.
    expect(res.body.gateway_metadata).toMatchObject({ requested: 'gatehouse/echo' });
    const generation = await call('GET', `/generation?id=${res.body.id}`);
    expect(generation.status).toBe(200);
    expect(generation.body.data).toMatchObject({
      id: res.body.id,
      origin: expect.any(String),
      api_type: expect.anything(),
    });
    // A body that is not an object is still the caller's 400.
    const refused = await call('POST', '/embeddings', [1, 2]);
    expect(refused.status).toBe(400);
  });
});

warnIfNoChromium('API reference', 'test/api-reference.test.ts');

declare const document: { querySelector(selector: string): { textContent: string | null } | null };

describe.skipIf(!hasChromium)('API reference page in headless Chromium', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite');
  });
  afterAll(() => gw?.stop());

  it('renders the document from the gateway alone: no font, script or call to another host', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      page.setDefaultTimeout(30_000);
      const elsewhere: string[] = [];
      // Opened as localhost: Scalar turns some features on for local pages.
      const origin = gw.url.replace('127.0.0.1', 'localhost');
      // Every request the page makes, refused if it leaves the gateway (no internet here anyway).
      await page.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith(`${origin}/`) || url.startsWith('data:') || url.startsWith('blob:'))
          return route.continue();
        elsewhere.push(url);
        return route.abort();
      });
      await page.goto(`${origin}/docs/`);
      // The reference rendered from the gateway's document: its title and the Inference group.
      await page.waitForFunction(() => {
        const text = document.querySelector('body')?.textContent ?? '';
        return text.includes('Self-hosted model gateway') && text.includes('Inference');
      });
      await page.waitForLoadState('networkidle');
      expect(await page.title()).toBe('Gatehouse API reference');
      expect(elsewhere).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
