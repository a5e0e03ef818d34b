/**
 * A Responses `tool_search` the caller runs itself (`execution: 'client'`, as Codex CLI declares
 * it) on a model another format's provider serves: the model is offered it as a function, its call
 * comes back as a `tool_search_call` item (streamed or not), and the tools a `tool_search_output`
 * loaded are offered on the next turn. A hosted tool_search (only OpenAI runs it) is dropped and
 * listed. Real gateway, recording mock Anthropic upstream, the official `openai` client.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminClient } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

const HEADER = 'x-gatehouse-dropped-fields';
const searchTool = {
  type: 'tool_search',
  execution: 'client',
  description: 'Find more tools',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};
const exec = {
  type: 'function',
  name: 'exec_command',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
  strict: false,
};
const calendar = {
  type: 'namespace',
  name: 'mcp__calendar',
  description: 'Calendar tools',
  tools: [
    {
      type: 'function',
      name: 'create_event',
      description: 'Creates an event',
      parameters: { type: 'object', properties: { title: { type: 'string' } } },
    },
  ],
};

describe('client tool_search on a translated call', () => {
  let ctx: Awaited<ReturnType<typeof gatewayWithUpstreams>>;
  let mock: MockUpstream;
  let openai: OpenAI;
  beforeAll(async () => {
    ctx = await gatewayWithUpstreams();
    mock = ctx.mock;
    await adminClient(ctx.gw.url)('POST', '/admin/credits', {
      organization_id: ctx.gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${ctx.gw.url}/api/v1`, apiKey: ctx.gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => ctx?.stop());
  beforeEach(() => mock.reset());

  it("the model's search comes back as a tool_search_call item, streamed or not", async () => {
    const search = {
      tool_calls: [{ id: 'toolu_s1', name: 'tool_search', arguments: { query: 'calendar' } }],
    };
    mock.enqueue({ reply: search }, { reply: search });
    const body = { model: 'test/claude', input: 'book a meeting', tools: [exec, searchTool], store: false };
    const { data, response } = await openai.responses.create(body as never).withResponse();
    expect(response.headers.get(HEADER)).toBeNull();
    const expected = {
      type: 'tool_search_call',
      call_id: 'toolu_s1',
      execution: 'client',
      arguments: { query: 'calendar' },
      status: 'completed',
    };
    expect(data.output).toEqual([expect.objectContaining(expected)]);

    const stream = await openai.responses.create({ ...body, stream: true } as never);
    const types: string[] = [];
    let final: OpenAI.Responses.Response | null = null;
    for await (const ev of stream as unknown as AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) {
      types.push(ev.type);
      if (ev.type === 'response.completed') final = ev.response;
    }
    expect(final?.output).toEqual([expect.objectContaining(expected)]);
    expect(types).not.toContain('response.function_call_arguments.delta');
    expect(types).toEqual(
      expect.arrayContaining(['response.output_item.added', 'response.output_item.done']),
    );

    // Anthropic was offered the search as a tool of its own, next to the caller's function.
    for (const r of mock.requests) {
      expect(r.format).toBe('anthropic-messages');
      expect(r.body.tools.map((t: { name: string }) => t.name)).toEqual(['exec_command', 'tool_search']);
      expect(r.body.tools[1]).toMatchObject({
        description: 'Find more tools',
        input_schema: searchTool.parameters,
      });
    }
  });

  it('the tools a tool_search_output loaded are offered next turn, and their calls come back namespaced', async () => {
    mock.enqueue({
      reply: {
        tool_calls: [{ id: 'toolu_c1', name: 'mcp__calendar__create_event', arguments: { title: 'sync' } }],
      },
    });
    const { data, response } = await openai.responses
      .create({
        model: 'test/claude',
        store: false,
        tools: [exec, searchTool],
        input: [
          { role: 'user', content: 'book a meeting' },
          {
            type: 'tool_search_call',
            execution: 'client',
            call_id: 'toolu_s1',
            arguments: { query: 'calendar' },
          },
          { type: 'tool_search_output', execution: 'client', call_id: 'toolu_s1', tools: [calendar] },
        ],
      } as never)
      .withResponse();
    expect(response.headers.get(HEADER)).toBeNull();
    expect(data.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        name: 'create_event',
        namespace: 'mcp__calendar',
        call_id: 'toolu_c1',
        arguments: '{"title":"sync"}',
      }),
    ]);
    const sent = mock.requests[0]!;
    expect(sent.body.tools.map((t: { name: string }) => t.name)).toEqual([
      'mcp__calendar__create_event',
      'exec_command',
      'tool_search',
    ]);
    const view = wireView(sent);
    expect(view.turns.map((t) => [t.role, t.toolCalls.map((c) => c.name), t.toolResults.length])).toEqual([
      ['user', [], 0],
      ['assistant', ['tool_search'], 0],
      ['user', [], 1],
    ]);
    expect(JSON.stringify(view.turns[2]?.toolResults)).toContain('mcp__calendar__create_event');
  });

  it('a hosted tool_search (only OpenAI runs it) is dropped and listed; deferred functions are offered up front', async () => {
    mock.enqueue({ reply: { text: 'ok' } });
    const { response } = await openai.responses
      .create({
        model: 'test/claude',
        store: false,
        input: 'hi',
        tools: [exec, { type: 'tool_search' }, { ...exec, name: 'later', defer_loading: true }],
      } as never)
      .withResponse();
    expect(response.headers.get(HEADER)).toBe('tools[1]');
    expect(mock.requests[0]?.body.tools.map((t: { name: string }) => t.name)).toEqual([
      'exec_command',
      'later',
    ]);
  });
});
