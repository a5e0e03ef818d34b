import { describe, expect, it } from 'vitest';
import { APPLY_PATCH_GRAMMAR, codexTurn } from '../../test/fixtures/agent-turns.js';
import type { ChatChunk, ChatResponse } from './chat.js';
import { chatResponseToResponses, chatStreamToResponses, responsesRequestToChat } from './responses.js';
import { flatName, toolCallItem, toolOrigins } from './responses-tools.js';

// Codex's turn, with a local_shell tool (older models), the xhigh effort and a priority tier added.
const turn = codexTurn('test/claude');
const codexBody = {
  ...turn,
  tools: [...turn.tools.slice(0, 3), { type: 'local_shell' }, ...turn.tools.slice(3)],
  reasoning: { effort: 'xhigh', summary: 'auto' },
  service_tier: 'priority',
};

describe('Codex-style tools through the canonical request', () => {
  it('flattens namespaces, turns custom and local_shell tools into functions, maps hosted search to the canonical web_search', () => {
    const req = responsesRequestToChat(codexBody);
    expect(req.tools?.map((t) => [t.function.name, t.origin ?? null])).toEqual([
      ['shell_command', null],
      ['apply_patch', { type: 'custom', name: 'apply_patch' }],
      ['mcp__docs__search', { type: 'function', name: 'search', namespace: 'mcp__docs' }],
      ['local_shell', { type: 'local_shell', name: 'local_shell' }],
    ]);
    const patch = req.tools?.[1]?.function;
    expect(patch?.description).toBe('Use the `apply_patch` tool to edit files.');
    expect(patch?.parameters).toMatchObject({ type: 'object', required: ['input'] });
    expect(JSON.stringify(patch?.parameters)).toContain(JSON.stringify(APPLY_PATCH_GRAMMAR).slice(1, -1));
    expect(req.reasoning).toEqual({ effort: 'xhigh' });
    expect(req).toMatchObject({
      prompt_cache_key: codexBody.prompt_cache_key,
      verbosity: 'low',
      service_tier: 'priority',
      dropped: ['tools[1].format', 'tools[4].external_web_access'],
      web_search: {},
    });
    expect(req).not.toHaveProperty('store');
  });

  it('maps the history items Codex sends back to canonical tool calls and results', () => {
    const req = responsesRequestToChat({
      ...codexBody,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
        { type: 'reasoning', summary: [], encrypted_content: 'opaque' },
        {
          type: 'function_call',
          namespace: 'mcp__docs',
          name: 'search',
          call_id: 'c1',
          arguments: '{"q":"x"}',
        },
        { type: 'custom_tool_call', call_id: 'c2', name: 'apply_patch', input: '*** Begin Patch' },
        {
          type: 'local_shell_call',
          call_id: 'c3',
          status: 'completed',
          action: { type: 'exec', command: ['ls'], timeout_ms: 1000 },
        },
        { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
        { type: 'function_call_output', call_id: 'c1', output: 'found' },
        { type: 'custom_tool_call_output', call_id: 'c2', output: 'Done!' },
        { type: 'function_call_output', call_id: 'c3', output: 'a.txt' },
      ],
    });
    expect(req.messages.slice(1)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'mcp__docs__search', arguments: '{"q":"x"}' } },
          {
            id: 'c2',
            type: 'function',
            function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' },
          },
          {
            id: 'c3',
            type: 'function',
            function: { name: 'local_shell', arguments: '{"command":["ls"],"timeout_ms":1000}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'found' },
      { role: 'tool', tool_call_id: 'c2', content: 'Done!' },
      { role: 'tool', tool_call_id: 'c3', content: 'a.txt' },
    ]);
    expect(req.dropped).toContain('input[5]');
  });

  it("reads tools from additional_tools items (Codex's lite dialect); drops a hosted tool_search and its items", () => {
    const req = responsesRequestToChat({
      model: 'm',
      input: [
        {
          type: 'additional_tools',
          role: 'developer',
          tools: [
            {
              type: 'namespace',
              name: 'functions',
              tools: [
                {
                  type: 'custom',
                  name: 'exec',
                  format: { type: 'grammar', syntax: 'lark', definition: 'start: SOURCE' },
                },
                { type: 'function', name: 'wait', parameters: { type: 'object' } },
              ],
            },
          ],
        },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
        { type: 'tool_search_call', execution: 'server', call_id: 's1', arguments: { query: 'x' } },
        { type: 'tool_search_output', execution: 'server', call_id: 's1', tools: [] },
      ],
      tools: [
        { type: 'function', name: 'exec_command', parameters: { type: 'object' } },
        { type: 'tool_search' },
        { type: 'function', name: 'deferred', parameters: { type: 'object' }, defer_loading: true },
      ],
    });
    // A deferred function is offered up front: the search that would load it is not there.
    expect(req.tools?.map((t) => t.function.name)).toEqual([
      'functions__exec',
      'functions__wait',
      'exec_command',
      'deferred',
    ]);
    expect(req.tools?.[0]?.origin).toEqual({ type: 'custom', name: 'exec', namespace: 'functions' });
    expect(req.dropped).toEqual(['input[0].tools[0].tools[0].format', 'input[2]', 'input[3]', 'tools[1]']);
    expect(req.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it('a client tool_search is a function to the model; the tools its output loaded are offered from then on', () => {
    const loaded = {
      type: 'namespace',
      name: 'mcp__calendar',
      tools: [{ type: 'function', name: 'create_event', parameters: { type: 'object' } }],
    };
    const req = responsesRequestToChat({
      model: 'm',
      input: [
        { type: 'message', role: 'user', content: 'book a meeting' },
        { type: 'tool_search_call', execution: 'client', call_id: 's1', arguments: { query: 'calendar' } },
        { type: 'tool_search_output', execution: 'client', call_id: 's1', tools: [loaded] },
        {
          type: 'function_call',
          call_id: 'c1',
          name: 'create_event',
          namespace: 'mcp__calendar',
          arguments: '{}',
        },
        { type: 'function_call_output', call_id: 'c1', output: 'booked' },
        // A later search that finds the same tool again: offered once.
        { type: 'tool_search_call', execution: 'client', call_id: 's2', arguments: { query: 'event' } },
        { type: 'tool_search_output', execution: 'client', call_id: 's2', tools: [loaded] },
      ],
      tools: [
        {
          type: 'tool_search',
          execution: 'client',
          description: 'Find tools',
          parameters: { type: 'object', properties: { query: { type: 'string' } } },
        },
      ],
    });
    expect(req.dropped).toBeUndefined();
    expect(req.tools?.map((t) => [t.function.name, t.origin?.type])).toEqual([
      ['mcp__calendar__create_event', 'function'],
      ['tool_search', 'tool_search'],
    ]);
    expect(req.tools?.[1]?.function).toMatchObject({ description: 'Find tools' });
    expect(req.messages).toEqual([
      { role: 'user', content: 'book a meeting' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 's1',
            type: 'function',
            function: { name: 'tool_search', arguments: '{"query":"calendar"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 's1', content: '{"loaded_tools":["mcp__calendar__create_event"]}' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'mcp__calendar__create_event', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'booked' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 's2', type: 'function', function: { name: 'tool_search', arguments: '{"query":"event"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 's2', content: '{"loaded_tools":["mcp__calendar__create_event"]}' },
    ]);

    // The model's call comes back as the caller's item.
    const origins = toolOrigins(req.tools);
    expect(
      toolCallItem(
        { id: 'fc_1', call_id: 'call_9', name: 'tool_search', arguments: '{"query":"mail"}' },
        'completed',
        origins,
      ),
    ).toEqual({
      type: 'tool_search_call',
      id: 'fc_1',
      call_id: 'call_9',
      execution: 'client',
      arguments: { query: 'mail' },
      status: 'completed',
    });
  });

  it('names: a namespaced tool is <namespace>__<name>; odd characters and long names stay valid', () => {
    expect(flatName('search')).toBe('search');
    expect(flatName('search', 'mcp__docs')).toBe('mcp__docs__search');
    expect(flatName('do.it', 'my server')).toBe('my_server__do_it');
    const long = flatName('t'.repeat(60), 'n'.repeat(20));
    expect(long).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(flatName('t'.repeat(60), 'n'.repeat(20))).toBe(long);
    expect(flatName('t'.repeat(61), 'n'.repeat(20))).not.toBe(long);
  });

  it('refuses two tools that end up with one name, and tools it cannot run', () => {
    const clash = {
      ...codexBody,
      tools: [
        { type: 'function', name: 'mcp__docs__search' },
        { type: 'namespace', name: 'mcp__docs', tools: [{ type: 'function', name: 'search' }] },
      ],
    };
    expect(() => responsesRequestToChat(clash)).toThrow(/^tools: two tools are named 'mcp__docs__search'/);
    expect(() => responsesRequestToChat({ ...codexBody, tools: [{ type: 'file_search' }] })).toThrow(
      /^tools\[0\]\.type: built-in tool 'file_search'/,
    );
  });
});

describe('the model’s calls come back as the item types Codex declared', () => {
  const request = responsesRequestToChat(codexBody);
  const calls = [
    {
      id: 'toolu_1',
      type: 'function' as const,
      function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch\\n"}' },
    },
    {
      id: 'toolu_2',
      type: 'function' as const,
      function: { name: 'mcp__docs__search', arguments: '{"q":"x"}' },
    },
    {
      id: 'toolu_3',
      type: 'function' as const,
      function: { name: 'local_shell', arguments: '{"command":["ls","-a"]}' },
    },
    {
      id: 'toolu_4',
      type: 'function' as const,
      function: { name: 'shell_command', arguments: '{"command":"ls"}' },
    },
  ];
  const expected = [
    {
      type: 'custom_tool_call',
      call_id: 'toolu_1',
      name: 'apply_patch',
      input: '*** Begin Patch\n',
      status: 'completed',
    },
    {
      type: 'function_call',
      call_id: 'toolu_2',
      name: 'search',
      namespace: 'mcp__docs',
      arguments: '{"q":"x"}',
      status: 'completed',
    },
    {
      type: 'local_shell_call',
      call_id: 'toolu_3',
      status: 'completed',
      action: { type: 'exec', command: ['ls', '-a'] },
    },
    {
      type: 'function_call',
      call_id: 'toolu_4',
      name: 'shell_command',
      arguments: '{"command":"ls"}',
      status: 'completed',
    },
  ];

  it('in a response', () => {
    const res: ChatResponse = {
      id: 'msg_1',
      object: 'chat.completion',
      created: 1,
      model: 'claude-x',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: calls },
          finish_reason: 'tool_calls',
        },
      ],
    };
    const out = chatResponseToResponses(res, 'test/claude', request);
    expect(out.output).toMatchObject(expected);
    for (const item of out.output) expect(item.id).toMatch(/^fc_/);
  });

  it('in a stream: custom input events, no argument deltas for custom and shell calls', async () => {
    async function* chunks(): AsyncGenerator<ChatChunk> {
      const base = { id: 'msg_1', object: 'chat.completion.chunk' as const, created: 1, model: 'claude-x' };
      yield { ...base, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] };
      for (const [i, c] of calls.entries()) {
        yield {
          ...base,
          choices: [
            {
              index: 0,
              delta: {
                tool_calls: [
                  {
                    index: i,
                    id: c.id,
                    type: 'function',
                    function: { name: c.function.name, arguments: '' },
                  },
                ],
              },
              finish_reason: null,
            },
          ],
        };
        const half = Math.floor(c.function.arguments.length / 2);
        for (const piece of [c.function.arguments.slice(0, half), c.function.arguments.slice(half)])
          yield {
            ...base,
            choices: [
              {
                index: 0,
                delta: { tool_calls: [{ index: i, function: { arguments: piece } }] },
                finish_reason: null,
              },
            ],
          };
      }
      yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] };
    }
    const events = [];
    for await (const e of chatStreamToResponses(chunks(), 'test/claude', request)) events.push(e.data);
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => (e as any).item);
    expect(done).toMatchObject(expected);
    const added = events
      .filter((e) => e.type === 'response.output_item.added')
      .map((e) => (e as any).item.type);
    expect(added).toEqual(['custom_tool_call', 'function_call', 'local_shell_call', 'function_call']);
    const argDeltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(new Set(argDeltas.map((e) => (e as any).output_index))).toEqual(new Set([1, 3]));
    expect(events.find((e) => e.type === 'response.custom_tool_call_input.done')).toMatchObject({
      output_index: 0,
      input: '*** Begin Patch\n',
    });
    const completed = events.at(-1) as any;
    expect(completed.type).toBe('response.completed');
    expect(completed.response.output).toMatchObject(expected);
  });
});
