import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import { geminiRequestProblems } from './support/gemini-request.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * Video input (OpenRouter's `video_url` content part, and `input_video` on /responses), with the
 * official client: Gemini watches it (inline data, or file data at its URL — YouTube links
 * included), an OpenAI-format provider gets the part as sent, and a provider that cannot take video
 * is never called: the caller gets a 400 naming the part.
 */

const CLIP = Buffer.from('00000020667479706d703432', 'hex').toString('base64');
const CLIP_URL = `data:video/mp4;base64,${CLIP}`;
const YOUTUBE = 'https://www.youtube.com/watch?v=dQw4w9WgXcQ';
const FILE = 'https://cdn.example.com/clips/lap-7.webm';

/** The openai client's types have no video part: OpenRouter's, as its own SDK sends it. */
const video = (url: string) => ({ type: 'video_url', video_url: { url } }) as never;

describe('video input', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => {
    mock.reset();
    mock.enqueue({ reply: { text: 'A car crosses the line.' } });
  });

  const ask = (model: string, stream = false) =>
    openai.chat.completions.create({
      model,
      stream: stream as false,
      messages: [
        {
          role: 'user',
          content: [{ type: 'text', text: 'What happens?' }, video(CLIP_URL), video(YOUTUBE), video(FILE)],
        },
      ],
    });

  it('Chat Completions → Gemini: inline data, a YouTube link as it is, a file with its media type', async () => {
    const res = await ask('test/gemini');
    expect(res.choices[0]?.message.content).toBe('A car crosses the line.');
    const [up] = mock.requests;
    expect(up?.format).toBe('gemini-generate');
    expect(up?.body.contents[0].parts).toEqual([
      { text: 'What happens?' },
      { inlineData: { mimeType: 'video/mp4', data: CLIP } },
      { fileData: { fileUri: YOUTUBE } },
      { fileData: { mimeType: 'video/webm', fileUri: FILE } },
    ]);
    expect(geminiRequestProblems(up?.body)).toEqual([]);
  });

  it('Responses input_video → Gemini file data', async () => {
    const res = await openai.responses.create({
      model: 'test/gemini',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What happens?' },
            { type: 'input_video', video_url: YOUTUBE } as never,
          ],
        },
      ],
    });
    expect(res.output_text).toBe('A car crosses the line.');
    const [up] = mock.requests;
    expect(up?.body.contents[0].parts).toEqual([
      { text: 'What happens?' },
      { fileData: { fileUri: YOUTUBE } },
    ]);
    expect(geminiRequestProblems(up?.body)).toEqual([]);
  });

  it('Chat Completions → an OpenAI-format provider: the parts as sent', async () => {
    await ask('test/gpt');
    const [up] = mock.requests;
    expect(up?.format).toBe('openai-chat');
    expect(up?.body.messages[0].content.slice(1)).toEqual([
      { type: 'video_url', video_url: { url: CLIP_URL } },
      { type: 'video_url', video_url: { url: YOUTUBE } },
      { type: 'video_url', video_url: { url: FILE } },
    ]);
  });

  it('Chat Completions → Anthropic: a 400 naming the part, streamed or not, and nothing is sent', async () => {
    for (const stream of [false, true]) {
      const err = await ask('test/claude', stream).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      const message = String((err as InstanceType<typeof OpenAI.BadRequestError>).message);
      expect(message).toContain('messages[0].content[1]');
      expect(message).toContain('video');
    }
    expect(mock.requests).toEqual([]);
  });
});
