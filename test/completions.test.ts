import { createOpenAI } from '@ai-sdk/openai';
import { OpenAI as LangChainOpenAI } from '@langchain/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * OpenAI's legacy Completions (`POST /completions`) with the official client: passed through to a
 * provider of the Completions API (the body as sent, fill-in-the-middle included; the answer and its
 * stream as they came, the usage priced), translated for any other (the prompt as the user's
 * message, the answer's text back in the Completions shape), and refused where only the native API
 * could answer.
 */
describe('legacy completions', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(() => stop?.());
  beforeEach(() => mock.reset());

  it('passes through to an OpenAI-format provider: the body as sent, the answer priced and recorded', async () => {
    mock.enqueue({ reply: { text: '    return n if n < 2 else fib(n - 1) + fib(n - 2)' } });
    const { data, response } = await openai.completions
      .create({
        model: 'test/gpt',
        prompt: 'def fib(n):\n',
        suffix: '\n\nprint(fib(10))',
        max_tokens: 32,
        temperature: 0.2,
        stop: ['\n\n'],
      })
      .withResponse();
    expect(data).toMatchObject({
      object: 'text_completion',
      choices: [
        { index: 0, text: '    return n if n < 2 else fib(n - 1) + fib(n - 2)', finish_reason: 'stop' },
      ],
      provider: 'openai',
    });
    expect(data.usage?.prompt_tokens).toBeGreaterThan(0);
    expect((data.usage as unknown as { cost: number }).cost).toBeGreaterThan(0);
    expect(response.headers.get('x-gatehouse-route')).toBe('passthrough');
    const [up] = mock.requests;
    expect(up?.path).toBe('/openai/v1/completions');
    expect(up?.headers.authorization).toBe('Bearer sk-operator-openai-0000');
    expect(up?.body).toEqual({
      model: 'gpt-x',
      prompt: 'def fib(n):\n',
      suffix: '\n\nprint(fib(10))',
      max_tokens: 32,
      temperature: 0.2,
      stop: ['\n\n'],
    });
    const id = response.headers.get('x-gatehouse-generation-id');
    const gen = await client(gw.url, gw.apiKey)('GET', `/generation?id=${id}`);
    expect(gen.status).toBe(200);
    expect(gen.body.data).toMatchObject({ model: 'test/gpt', tokens_prompt: data.usage?.prompt_tokens });
  });

  it('streams a lane as it came, with its usage priced at the end', async () => {
    mock.enqueue({ reply: { text: 'one two three' } });
    const stream = await openai.completions.create({ model: 'test/gpt', prompt: 'count:', stream: true });
    let text = '';
    let usage: (OpenAI.CompletionUsage & { cost?: number }) | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('one two three');
    expect(usage?.cost).toBeGreaterThan(0);
    expect(mock.requests[0]?.body.stream_options).toEqual({ include_usage: true });
  });

  it('translates for a provider of another format: the prompt as the user’s message, the text back', async () => {
    mock.enqueue({ reply: { text: 'Paris.' } }, { reply: { text: 'Rome, of course.' } });
    const res = await openai.completions.create({
      model: 'test/claude',
      prompt: 'The capital of France is',
      max_tokens: 8,
    });
    expect(res).toMatchObject({
      object: 'text_completion',
      choices: [{ index: 0, text: 'Paris.', finish_reason: 'stop' }],
    });
    expect(res.usage?.total_tokens).toBeGreaterThan(0);
    const [up] = mock.requests;
    expect(up?.format).toBe('anthropic-messages');
    expect(up?.body).toMatchObject({
      model: 'claude-x',
      max_tokens: 8,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'The capital of France is' }] }],
    });

    const stream = await openai.completions.create({
      model: 'test/claude',
      prompt: ['Italy?'],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      text += chunk.choices[0]?.text ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('Rome, of course.');
    expect(finish).toBe('stop');
  });

  it('the Vercel AI SDK’s completion model and LangChain’s OpenAI LLM work unchanged', async () => {
    mock.enqueue(
      { reply: { text: 'a fine day' } },
      { reply: { text: 'streamed along' } },
      { reply: { text: 'from langchain' } },
    );
    const provider = createOpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey });
    const { text, usage } = await generateText({
      model: provider.completion('test/gpt'),
      prompt: 'Today is',
      maxRetries: 0,
    });
    expect(text).toBe('a fine day');
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(mock.requests[0]?.path).toBe('/openai/v1/completions');
    const streamed = streamText({ model: provider.completion('test/gpt'), prompt: 'Go', maxRetries: 0 });
    expect(await streamed.text).toBe('streamed along');
    const llm = new LangChainOpenAI({
      model: 'test/claude',
      apiKey: gw.apiKey,
      configuration: { baseURL: `${gw.url}/api/v1` },
      maxRetries: 0,
    });
    expect(await llm.invoke('Say something')).toBe('from langchain');
    expect(mock.requests[2]?.format).toBe('anthropic-messages');
  });

  it('refuses, naming the field, what only the Completions API itself answers (nothing goes upstream)', async () => {
    for (const [body, field] of [
      [{ prompt: 'a', suffix: 'b' }, 'suffix'],
      [{ prompt: ['a', 'b'] }, 'prompt'],
      [{ prompt: [1, 2, 3] }, 'prompt'],
      [{ prompt: 'a', echo: true }, 'echo'],
      [{ prompt: 'a', logprobs: 2 }, 'logprobs'],
      [{}, 'prompt'],
    ] as const) {
      const err = await openai.completions
        .create({ model: 'test/claude', ...(body as unknown as { prompt: string }) })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(field);
    }
    expect(mock.requests).toHaveLength(0);
  });
});
