import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream, wireView } from './mock-upstream.js';

// The mock's newer wire formats, read by the official clients (which check the event sequence).
let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream();
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

const openai = () => new OpenAI({ baseURL: `${mock.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: mock.url, apiKey: 'sk-ant-test', maxRetries: 0 });

describe('OpenAI Responses', () => {
  it('streams text, reasoning and a function call that the SDK assembles into the final response', async () => {
    mock.enqueue({
      reply: {
        text: 'Let me look.',
        reasoning: 'Need the file.',
        tool_calls: [{ id: 'call_1', name: 'read', arguments: { path: 'a.txt' } }],
        usage: { prompt_tokens: 50, completion_tokens: 9, cached_tokens: 40, reasoning_tokens: 3 },
      },
    });
    const stream = openai().responses.stream({
      model: 'gpt-x',
      input: 'read a.txt',
      include: ['reasoning.encrypted_content'],
    });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    const final = await stream.finalResponse();

    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.function_call_arguments.done');
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect((final.output[1] as OpenAI.Responses.ResponseOutputMessage).content).toMatchObject([
      { type: 'output_text', text: 'Let me look.' },
    ]);
    const call = final.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ call_id: 'call_1', name: 'read', arguments: '{"path":"a.txt"}' });
    expect((final.output[0] as OpenAI.Responses.ResponseReasoningItem).encrypted_content).toBeTruthy();
    expect(final.usage).toMatchObject({
      input_tokens: 50,
      input_tokens_details: { cached_tokens: 40 },
      output_tokens: 9,
      output_tokens_details: { reasoning_tokens: 3 },
    });
  });

  it('answers without a stream, errors in OpenAI shape, and is seen by wireView', async () => {
    const res = await openai().responses.create({
      model: 'gpt-x',
      instructions: 'be brief',
      input: [
        { role: 'user', content: 'hi' },
        { type: 'function_call', call_id: 'c1', name: 'ls', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
      ],
      tools: [{ type: 'function', name: 'ls', parameters: {}, strict: false }],
    });
    expect(res.output_text).toBe('Hello from gpt-x!');
    expect(res.status).toBe('completed');
    const v = wireView(mock.requests[0]!);
    expect(v).toMatchObject({ format: 'openai-responses', system: 'be brief', tools: [{ name: 'ls' }] });
    expect(v.turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user']);
    expect(v.turns[2]?.toolResults).toEqual([{ id: 'c1', content: 'a.txt' }]);

    mock.enqueue({ status: 429, error: { message: 'slow down' } });
    const err = await openai()
      .responses.create({ model: 'gpt-x', input: 'hi' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toContain('slow down');
  });
});

describe('count_tokens and model listings', () => {
  it('counts tokens and lists models in each format', async () => {
    const count = await anthropic().messages.countTokens({
      model: 'claude-x',
      messages: [{ role: 'user', content: 'one two three' }],
    });
    expect(count.input_tokens).toBeGreaterThan(0);

    mock.models = ['claude-a', 'claude-b'];
    const anthropicIds: string[] = [];
    for await (const m of anthropic().models.list()) anthropicIds.push(m.id);
    expect(anthropicIds).toEqual(['claude-a', 'claude-b']);
    expect((await anthropic().models.retrieve('claude-b')).type).toBe('model');

    const openaiIds: string[] = [];
    for await (const m of openai().models.list()) openaiIds.push(m.id);
    expect(openaiIds).toEqual(['claude-a', 'claude-b']);
    await expect(openai().models.retrieve('nope')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});
