import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * Documents (a PDF, a text file) through every caller format to a provider of another format, with
 * the official clients: each upstream receives its own kind of document, and the answer comes back.
 * On a pass-through call the caller's document block reaches the provider untouched.
 */

const PDF = Buffer.from('%PDF-1.4 quarterly report').toString('base64');
const PDF_URL = `data:application/pdf;base64,${PDF}`;
const TEXT = 'meeting notes: ship on Friday';

describe('documents across formats', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => {
    mock.reset();
    mock.enqueue({ reply: { text: 'It is about the quarter.' } });
  });

  it('Chat Completions file parts → Anthropic document blocks (PDF with its title and breakpoint, text as text)', async () => {
    const res = await openai.chat.completions.create({
      model: 'test/claude',
      messages: [
        {
          role: 'user',
          content: [
            // OpenRouter's breakpoint on a part, which the openai client's types do not know.
            {
              type: 'file',
              file: { filename: 'report.pdf', file_data: PDF_URL },
              cache_control: { type: 'ephemeral' },
            },
            {
              type: 'file',
              file: {
                filename: 'notes.txt',
                file_data: `data:text/plain;base64,${Buffer.from(TEXT).toString('base64')}`,
              },
            },
            { type: 'text', text: 'What is this about?' },
          ] as OpenAI.Chat.ChatCompletionContentPart[],
        },
      ],
    });
    expect(res.choices[0]?.message.content).toBe('It is about the quarter.');
    const [up] = mock.requests;
    expect(up?.format).toBe('anthropic-messages');
    expect(up?.body.messages[0].content).toEqual([
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF },
        title: 'report.pdf',
        cache_control: { type: 'ephemeral' },
      },
      {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: TEXT },
        title: 'notes.txt',
      },
      { type: 'text', text: 'What is this about?' },
    ]);
  });

  it('Messages document blocks → OpenAI file parts; the answer in Anthropic format', async () => {
    const msg = await anthropic.messages.create({
      model: 'test/gpt',
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: PDF },
              title: 'report.pdf',
            },
            { type: 'text', text: 'What is this about?' },
          ],
        },
      ],
    });
    expect(msg.content).toMatchObject([{ type: 'text', text: 'It is about the quarter.' }]);
    const [up] = mock.requests;
    expect(up?.format).toBe('openai-chat');
    expect(up?.body.messages[0].content).toEqual([
      { type: 'file', file: { filename: 'report.pdf', file_data: PDF_URL } },
      { type: 'text', text: 'What is this about?' },
    ]);
  });

  it('Responses input_file → Gemini inline data', async () => {
    const res = await openai.responses.create({
      model: 'test/gemini',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', filename: 'report.pdf', file_data: PDF_URL },
            { type: 'input_text', text: 'What is this about?' },
          ],
        },
      ],
    });
    expect(res.output_text).toBe('It is about the quarter.');
    const [up] = mock.requests;
    expect(up?.format).toBe('gemini-generate');
    expect(up?.body.contents[0].parts).toEqual([
      { inlineData: { mimeType: 'application/pdf', data: PDF } },
      { text: 'What is this about?' },
    ]);
  });

  it('a document the target cannot take is a 400 in the caller format naming the field, and nothing is sent', async () => {
    const err = await anthropic.messages
      .create({
        model: 'test/gpt',
        max_tokens: 100,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'file', file_id: 'file_011' } } as never,
              { type: 'text', text: 'hi' },
            ],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: expect.stringContaining('messages[0].content[0].source.type'),
      },
    });
    expect(mock.requests).toEqual([]);
  });

  it('pass-through: a /messages document with citations reaches Anthropic as sent', async () => {
    const document = {
      type: 'document' as const,
      source: { type: 'text' as const, media_type: 'text/plain' as const, data: TEXT },
      title: 'notes',
      citations: { enabled: true },
    };
    await anthropic.messages.create({
      model: 'test/claude',
      max_tokens: 100,
      messages: [{ role: 'user', content: [document, { type: 'text', text: 'When do we ship?' }] }],
    });
    expect(mock.requests[0]?.body.messages[0].content[0]).toEqual(document);
  });
});

describe('images and documents by URL to a provider that takes data inline only (Gemini)', () => {
  const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  let files: Server;
  let origin: string;
  let fetched = 0;
  beforeAll(async () => {
    files = createServer((req, res) => {
      fetched++;
      if (req.url === '/cat.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      if (req.url === '/report.pdf')
        return res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4');
      res.writeHead(404).end();
    });
    await new Promise<void>((done) => files.listen(0, '127.0.0.1', done));
    origin = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  });
  afterAll(() => files?.close());

  const ask = (openai: OpenAI) =>
    openai.chat.completions.create({
      model: 'test/gemini',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `${origin}/cat.png` } },
            { type: 'file', file: { filename: 'report.pdf', file_data: `${origin}/report.pdf` } },
            { type: 'text', text: 'What are these?' },
          ] as OpenAI.Chat.ChatCompletionContentPart[],
        },
      ],
    });

  it('fetched and sent inline where the operator allows the address (GATEHOUSE_REMOTE_MEDIA=any)', async () => {
    const { gw, mock, stop } = await gatewayWithUpstreams({ GATEHOUSE_REMOTE_MEDIA: 'any' });
    try {
      mock.enqueue({ reply: { text: 'A cat and a report.' } });
      const res = await ask(new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 }));
      expect(res.choices[0]?.message.content).toBe('A cat and a report.');
      expect(mock.requests[0]?.body.contents[0].parts).toEqual([
        { inlineData: { mimeType: 'image/png', data: PNG.toString('base64') } },
        { inlineData: { mimeType: 'application/pdf', data: Buffer.from('%PDF-1.4').toString('base64') } },
        { text: 'What are these?' },
      ]);
    } finally {
      await stop();
    }
  });

  it('by default a private address is refused: a 400 naming the URL, nothing fetched, nothing sent', async () => {
    const { gw, mock, stop } = await gatewayWithUpstreams();
    try {
      const before = fetched;
      const err = await ask(
        new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 }),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as Error).message).toContain(`could not fetch ${origin}/cat.png`);
      expect(fetched).toBe(before);
      expect(mock.requests).toEqual([]);
    } finally {
      await stop();
    }
  });
});
