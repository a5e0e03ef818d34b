import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Guardrail content filters against a real gateway: what reaches the provider (the mock records
 * it) and what the caller gets back.
 */
describe('content filters', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** A fresh API key with one guardrail assigned to it. */
  async function keyWithGuardrail(guardrail: object) {
    const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
    const g = await mgmt('POST', '/guardrails', { name: 'filters under test', ...guardrail });
    expect(g.status).toBe(201);
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    return { call: client(gw.url, key.body.key), guardrailId: g.body.data.id as string };
  }

  /** Everything the provider received (the recorded request body, as JSON text). */
  const sent = (i = 0) => JSON.stringify(mock.requests[i]?.body ?? null);
  const chat = (content: unknown, extra: object = {}) => ({
    model: 'test/gpt',
    messages: [{ role: 'user', content }],
    ...extra,
  });

  describe('custom patterns run in linear time', () => {
    it("answers promptly on a pathological pattern, and another tenant's concurrent call completes", async () => {
      const { call } = await keyWithGuardrail({
        content_filters: [{ pattern: '(a|a)+$', action: 'block', label: 'evil' }],
      });
      const other = await makeOrganization(gw.url, 'Neighbour');
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: other.organizationId,
        amount_usd: 10,
      });
      const neighbour = client(gw.url, other.apiKey);
      // A backtracking engine needs ~2^40 steps on this prompt: hours, with every tenant stalled.
      const prompt = `${'a'.repeat(40)}b`;
      const [filtered, theirs] = await Promise.all([
        call('POST', '/chat/completions', {
          model: 'test/gpt',
          messages: [{ role: 'user', content: prompt }],
        }),
        neighbour('POST', '/chat/completions', {
          model: 'test/gpt',
          messages: [{ role: 'user', content: 'hi' }],
        }),
      ]);
      expect(filtered.status).toBe(200);
      expect(theirs.status).toBe(200);
      // The pattern still matches what it should.
      const blocked = await call('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'a'.repeat(40) }],
      });
      expect(blocked.status).toBe(403);
      expect(blocked.body.error.message).toContain('evil');
    }, 20_000);

    it('refuses patterns RE2 cannot run with 400 naming the pattern and why', async () => {
      for (const [pattern, why] of [
        ['(a)\\1', /backreferences/],
        ['secret(?=\\d)', /lookaround/],
        ['(?<!x)y', /lookaround/],
      ] as const) {
        const res = await mgmt('POST', '/guardrails', {
          name: 'bad pattern',
          content_filters: [
            { pattern: 'fine', action: 'flag' },
            { pattern, action: 'block' },
          ],
        });
        expect(res.status, pattern).toBe(400);
        expect(res.body.error.message).toContain('content_filters[1].pattern');
        expect(res.body.error.message).toContain(JSON.stringify(pattern));
        expect(res.body.error.message).toMatch(why);
      }
      const g = await mgmt('POST', '/guardrails', { name: 'ok pattern' });
      const patched = await mgmt('PATCH', `/guardrails/${g.body.data.id}`, {
        content_filters: [{ pattern: '(?=x)', action: 'redact' }],
      });
      expect(patched.status).toBe(400);
      expect(patched.body.error.message).toMatch(/not supported.*RE2/);
    });

    it('a stored pattern RE2 cannot run fails closed: the call is refused, nothing is sent', async () => {
      const { call, guardrailId } = await keyWithGuardrail({
        content_filters: [{ pattern: 'x', action: 'redact', label: 'legacy' }],
      });
      // As stored before patterns were checked on write.
      await gw.services.db
        .updateTable('guardrails')
        .set({ content_filters: JSON.stringify([{ pattern: 'a(?=b)', action: 'redact', label: 'legacy' }]) })
        .where('id', '=', guardrailId)
        .execute();
      gw.services.policy.invalidate();
      const res = await call('POST', '/chat/completions', {
        model: 'test/gpt',
        messages: [{ role: 'user', content: 'hello' }],
      });
      expect(res.status).toBe(403);
      expect(res.body.error.message).toMatch(/legacy.*not supported/);
      expect(res.body.error.message).not.toContain('a(?=b)');
      expect(mock.requests).toHaveLength(0);
    });
  });

  describe('what the provider reads, not how it is encoded', () => {
    it('blocks PII hidden by zero-width spaces, fullwidth forms, non-breaking hyphens and dots', async () => {
      const { call } = await keyWithGuardrail({
        content_filter_builtins: [
          { slug: 'email', action: 'block' },
          { slug: 'ssn', action: 'block' },
          { slug: 'credit-card', action: 'block' },
        ],
      });
      for (const [text, label] of [
        ['mail ada\u200b@example.com', 'Email'],
        ['mail ada＠example.com', 'Email'],
        ['ssn １２３-４５-６７８９', 'Social Security'],
        ['ssn 123\u201145\u20116789', 'Social Security'],
        ['card 4111.1111.1111.1111', 'Credit card'],
      ] as const) {
        const res = await call('POST', '/chat/completions', chat(text));
        expect(res.status, text).toBe(403);
        expect(res.body.error.message).toContain(label);
      }
      expect(mock.requests).toHaveLength(0);
    });

    it('redacts the original characters, whatever their encoding', async () => {
      const { call } = await keyWithGuardrail({
        content_filter_builtins: [{ slug: 'email', action: 'redact' }],
      });
      const res = await call('POST', '/chat/completions', chat('write to ada\u200b＠example.com today'));
      expect(res.status).toBe(200);
      expect(mock.requests[0]?.body.messages[0].content).toBe('write to [REDACTED:EMAIL] today');
    });

    it('catches an SSN split across two text parts of one message (chat and messages formats)', async () => {
      const { call } = await keyWithGuardrail({
        content_filter_builtins: [{ slug: 'ssn', action: 'redact' }],
      });
      const parts = [
        { type: 'text', text: 'my ssn is 123-45' },
        { type: 'text', text: '-6789, thanks' },
      ];
      const res = await call('POST', '/chat/completions', chat(parts));
      expect(res.status).toBe(200);
      expect(mock.requests[0]?.body.messages[0].content).toEqual([
        { type: 'text', text: 'my ssn is [REDACTED:SSN]' },
        { type: 'text', text: ', thanks' },
      ]);
      expect(res.body.safeguard_results[0]).toMatchObject({ status: { type: 'redacted' }, matches: 1 });

      const anthropic = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        messages: [{ role: 'user', content: parts }],
      });
      expect(anthropic.status).toBe(200);
      expect(sent(1)).not.toContain('6789');
      expect(sent(1)).toContain('[REDACTED:SSN]');

      const blocking = await keyWithGuardrail({
        content_filter_builtins: [{ slug: 'ssn', action: 'block' }],
      });
      const refused = await blocking.call('POST', '/chat/completions', chat(parts));
      expect(refused.status).toBe(403);
      expect(mock.requests).toHaveLength(2);
    });
  });

  describe('every text field the provider receives', () => {
    const T = 'SECRET-42';
    const filter = (action: string) => ({
      content_filters: [{ pattern: 'SECRET-\\d+', action, label: 'codename' }],
    });
    const fn = (over: object = {}) => ({
      type: 'function',
      function: {
        name: 'lookup',
        description: 'looks things up',
        parameters: { type: 'object', properties: { q: { type: 'string', description: 'query' } } },
        ...over,
      },
    });
    /** Chat bodies with the codename in one field each. */
    const chatFields: Record<string, (model: string) => object> = {
      'message name': (model) => ({ model, messages: [{ role: 'user', name: T, content: 'hi' }] }),
      'tool-call arguments': (model) => ({
        model,
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'lookup', arguments: `{"q":"${T}"}` } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'nothing found' },
        ],
        tools: [fn()],
      }),
      'tool result': (model) => ({
        model,
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: `found ${T}` },
        ],
        tools: [fn()],
      }),
      'tool description': (model) => ({
        model,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [fn({ description: `about ${T}` })],
      }),
      'tool parameter schema': (model) => ({
        model,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          fn({
            parameters: {
              type: 'object',
              properties: { q: { type: 'string', description: `like ${T}`, enum: [T, 'other'] } },
            },
          }),
        ],
      }),
      'tool parameter name': (model) => ({
        model,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [fn({ parameters: { type: 'object', properties: { [T]: { type: 'string' } } } })],
      }),
      'response_format schema': (model) => ({
        model,
        messages: [{ role: 'user', content: 'hi' }],
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'answer',
            schema: { type: 'object', properties: { a: { type: 'string', description: `not ${T}` } } },
          },
        },
      }),
    };

    for (const [field, body] of Object.entries(chatFields)) {
      it(`${field}: blocked and redacted, on a pass-through lane and on a translated call`, async () => {
        const models = ['test/gpt', 'test/claude'];
        const blocking = await keyWithGuardrail(filter('block'));
        for (const model of models) {
          const res = await blocking.call('POST', '/chat/completions', body(model));
          expect(res.status, `${field} ${model}`).toBe(403);
        }
        expect(mock.requests).toHaveLength(0);
        const redacting = await keyWithGuardrail(filter('redact'));
        for (const [i, model] of models.entries()) {
          const res = await redacting.call('POST', '/chat/completions', body(model));
          expect(res.status, `${field} ${model}: ${res.text}`).toBe(200);
          expect(sent(i), `${field} ${model}`).not.toContain(T);
          // (A translation to Anthropic has nowhere to put a message's name.)
          if (i === 0 || field !== 'message name')
            expect(sent(i), `${field} ${model}`).toContain('[REDACTED:CODENAME]');
        }
      });
    }

    it('a large body is redacted as a small one is (its unchanged bytes are not what goes upstream)', async () => {
      // ~200 KB of history: large enough that a lane forwards unchanged members as the caller's bytes.
      const history = Array.from({ length: 400 }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: `turn ${i}: ${'lorem ipsum '.repeat(40)}`,
      }));
      const body = (model: string) => ({
        model,
        messages: [...history, { role: 'user', content: `find ${T}` }],
      });
      const { call } = await keyWithGuardrail(filter('redact'));
      for (const [i, model] of ['test/gpt', 'test/claude'].entries()) {
        const res = await call('POST', '/chat/completions', body(model));
        expect(res.status, `${model}: ${res.text}`).toBe(200);
        expect(mock.requests[i]?.raw, model).not.toContain(T);
        expect(mock.requests[i]?.raw, model).toContain('[REDACTED:CODENAME]');
      }
      expect(mock.requests[0]?.body.messages).toHaveLength(401);
    });

    it('messages format: system, tool inputs and results, tool schemas', async () => {
      const { call } = await keyWithGuardrail(filter('redact'));
      const res = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        system: `you know ${T}`,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'lookup', input: { q: T } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: `got ${T}` }] },
        ],
        tools: [
          {
            name: 'lookup',
            description: `finds ${T}`,
            input_schema: { type: 'object', properties: { [T]: { type: 'string', description: T } } },
          },
        ],
      });
      expect(res.status).toBe(200);
      expect(sent()).not.toContain(T);
      expect(sent().match(/REDACTED:CODENAME/g)).toHaveLength(6);
    });

    it('documents: a text file inlined in a file part, an Anthropic text document — on a lane and translated', async () => {
      const b64 = (t: string) => Buffer.from(t).toString('base64');
      const file = {
        type: 'file',
        file: { filename: 'notes.txt', file_data: `data:text/plain;base64,${b64(`plan ${T}`)}` },
      };
      const doc = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: `plan ${T}` } };
      const calls = [
        ['/chat/completions', { model: 'test/gpt', messages: [{ role: 'user', content: [file] }] }],
        ['/chat/completions', { model: 'test/claude', messages: [{ role: 'user', content: [file] }] }],
        ['/messages', { model: 'test/claude', max_tokens: 10, messages: [{ role: 'user', content: [doc] }] }],
        ['/messages', { model: 'test/gpt', max_tokens: 10, messages: [{ role: 'user', content: [doc] }] }],
      ] as const;
      const blocking = await keyWithGuardrail(filter('block'));
      for (const [path, body] of calls)
        expect((await blocking.call('POST', path, body)).status, path).toBe(403);
      expect(mock.requests).toHaveLength(0);
      const redacting = await keyWithGuardrail(filter('redact'));
      for (const [path, body] of calls)
        expect((await redacting.call('POST', path, body)).status, path).toBe(200);
      // What each provider read: the lane's file part still base64, decoded here.
      const readable = mock.requests.map((r) =>
        JSON.stringify(r.body).replace(/data:text\/plain;base64,([A-Za-z0-9+/=]+)/g, (_, d: string) =>
          Buffer.from(d, 'base64').toString('utf8'),
        ),
      );
      expect(readable).toHaveLength(4);
      for (const text of readable) {
        expect(text).not.toContain(T);
        expect(text).toContain('plan [REDACTED:CODENAME]');
      }
    });

    it('responses format: instructions, call arguments and outputs, tool schemas, text.format schema', async () => {
      const { call } = await keyWithGuardrail(filter('redact'));
      const res = await call('POST', '/responses', {
        model: 'test/gpt',
        instructions: `mind ${T}`,
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
          { type: 'function_call', call_id: 'c', name: 'lookup', arguments: `{"q":"${T}"}` },
          { type: 'function_call_output', call_id: 'c', output: `saw ${T}` },
        ],
        tools: [
          {
            type: 'function',
            name: 'lookup',
            description: `finds ${T}`,
            parameters: { type: 'object', properties: { q: { type: 'string', description: T } } },
          },
        ],
        text: {
          format: {
            type: 'json_schema',
            name: 'out',
            schema: { type: 'object', properties: { a: { type: 'string', description: T } } },
          },
        },
      });
      expect(res.status).toBe(200);
      expect(sent()).not.toContain(T);
      expect(sent().match(/REDACTED:CODENAME/g)).toHaveLength(6);
    });
  });

  describe('on the model answer (apply_to: response)', () => {
    const ssn = (action: string, apply_to = 'response') => ({
      content_filter_builtins: [{ slug: 'ssn', action, apply_to }],
    });
    const codename = (action: string) => ({
      content_filters: [{ pattern: 'project falcon', action, label: 'codename', apply_to: 'response' }],
    });
    /** The data objects of an SSE body. */
    const events = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith('data: ') && !l.includes('[DONE]'))
        .map((l) => JSON.parse(l.slice(6)));
    const streamedChat = (text: string) =>
      events(text)
        .map((e) => e.choices?.[0]?.delta?.content ?? '')
        .join('');

    it('is stored and shown, and leaves the request alone', async () => {
      const { call, guardrailId } = await keyWithGuardrail(ssn('redact'));
      const g = await mgmt('GET', `/guardrails/${guardrailId}`);
      expect(g.body.data.content_filter_builtins[0]).toMatchObject({ slug: 'ssn', apply_to: 'response' });
      mock.enqueue({ reply: { text: 'yours is 123-45-6789.' } });
      const res = await call('POST', '/chat/completions', chat('is 987-65-4321 mine?'));
      expect(res.status).toBe(200);
      expect(sent()).toContain('987-65-4321');
      expect(res.body.choices[0].message.content).toBe('yours is [REDACTED:SSN].');
      expect(res.body.safeguard_results).toEqual([
        {
          type: 'content_filter',
          status: { type: 'redacted' },
          label: 'Social Security numbers',
          slug: 'ssn',
          matches: 1,
          stage: 'response',
        },
      ]);
      const bad = await mgmt('POST', '/guardrails', {
        name: 'x',
        content_filter_builtins: [{ slug: 'ssn', action: 'redact', apply_to: 'answer' }],
      });
      expect(bad.status).toBe(400);
    });

    it('redacts a whole answer in every format, passed through or translated', async () => {
      const { call } = await keyWithGuardrail(ssn('redact', 'both'));
      const reply = { reply: { text: 'yours is 123-45-6789.' } };
      mock.enqueue(reply, reply, reply, reply);
      const translated = await call('POST', '/chat/completions', { ...chat('hi'), model: 'test/claude' });
      expect(translated.body.choices[0].message.content).toBe('yours is [REDACTED:SSN].');
      const anthropic = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(anthropic.status).toBe(200);
      expect(anthropic.body.content[0].text).toBe('yours is [REDACTED:SSN].');
      const responses = await call('POST', '/responses', { model: 'test/gpt', input: 'hi' });
      expect(responses.status).toBe(200);
      expect(responses.text).not.toContain('6789');
      expect(responses.body.output_text).toBe('yours is [REDACTED:SSN].');
      const translatedResponses = await call('POST', '/responses', { model: 'test/claude', input: 'hi' });
      expect(translatedResponses.text).not.toContain('6789');
      expect(translatedResponses.body.output_text).toBe('yours is [REDACTED:SSN].');
    });

    it('flag reports and lets the answer through; block refuses it in the caller format', async () => {
      const flagging = await keyWithGuardrail(ssn('flag'));
      mock.enqueue({ reply: { text: 'yours is 123-45-6789.' } });
      const flagged = await flagging.call('POST', '/chat/completions', chat('hi'));
      expect(flagged.body.choices[0].message.content).toBe('yours is 123-45-6789.');
      expect(flagged.body.safeguard_results[0]).toMatchObject({
        status: { type: 'flagged' },
        stage: 'response',
      });

      const blocking = await keyWithGuardrail(ssn('block'));
      mock.enqueue({ reply: { text: 'yours is 123-45-6789.' }, times: 2 });
      const blocked = await blocking.call('POST', '/chat/completions', chat('hi'));
      expect(blocked.status).toBe(403);
      expect(blocked.body.error.message).toMatch(/content filter: Social Security/);
      expect(blocked.text).not.toContain('6789');
      const anthropic = await blocking.call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(anthropic.status).toBe(403);
      expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    });

    it('redacts a match split across two streamed deltas (chat pass-through)', async () => {
      const { call } = await keyWithGuardrail(ssn('redact'));
      const chunk = (content: string) => ({
        id: 'c',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-x',
        choices: [{ index: 0, delta: { content }, finish_reason: null }],
      });
      mock.enqueue({
        stream: [
          { data: chunk('yours is 123-4') },
          { data: chunk('5-6789, keep it safe') },
          {
            data: {
              ...chunk(''),
              choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
              usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
            },
          },
          { raw: 'data: [DONE]\n\n' },
        ],
      });
      const res = await call('POST', '/chat/completions', chat('hi', { stream: true }));
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('6789');
      expect(streamedChat(res.text)).toBe('yours is [REDACTED:SSN], keep it safe');
    });

    it('redacts a match split across deltas that arrive in one read, on the messages pass-through', async () => {
      // One upstream read's events are relayed as one frame (providers/lane.ts); the filters still
      // see them one by one.
      const { call } = await keyWithGuardrail(codename('redact'));
      const ev = (type: string, data: object) =>
        `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      const delta = (text: string) =>
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
      mock.enqueue({
        headers: { 'content-type': 'text/event-stream' },
        body: [
          ev('message_start', {
            message: {
              id: 'msg_1',
              type: 'message',
              role: 'assistant',
              model: 'claude-x',
              content: [],
              usage: { input_tokens: 3, output_tokens: 1 },
            },
          }),
          ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
          delta('we call it project'),
          delta(' falcon internally'),
          ev('content_block_stop', { index: 0 }),
          ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 6 } }),
          ev('message_stop', {}),
        ].join(''),
      });
      const res = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('falcon');
      const text = events(res.text)
        .filter((e) => e.type === 'content_block_delta')
        .map((e) => e.delta.text)
        .join('');
      expect(text).toBe('we call it [REDACTED:CODENAME] internally');
      expect(events(res.text).at(-1)).toEqual({ type: 'message_stop' });
    });

    it('redacts across deltas on translated streams and on messages and responses pass-through', async () => {
      const { call } = await keyWithGuardrail(codename('redact'));
      // The mock streams text word by word: "project" and " falcon" come in two deltas.
      const reply = { reply: { text: 'we call it project falcon internally' } };
      mock.enqueue(reply, reply, reply);
      const translated = await call('POST', '/chat/completions', {
        ...chat('hi', { stream: true }),
        model: 'test/claude',
      });
      expect(streamedChat(translated.text)).toBe('we call it [REDACTED:CODENAME] internally');

      const anthropic = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(anthropic.text).not.toContain('falcon');
      const text = events(anthropic.text)
        .filter((e) => e.type === 'content_block_delta')
        .map((e) => e.delta.text)
        .join('');
      expect(text).toBe('we call it [REDACTED:CODENAME] internally');

      const responses = await call('POST', '/responses', { model: 'test/gpt', input: 'hi', stream: true });
      expect(responses.text).not.toContain('falcon');
      const deltas = events(responses.text)
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
      expect(deltas).toBe('we call it [REDACTED:CODENAME] internally');
      const done = events(responses.text).find((e) => e.type === 'response.completed');
      expect(done.response.output[0].content[0].text).toBe('we call it [REDACTED:CODENAME] internally');
    });

    it('block on a streamed answer ends the stream with an error event', async () => {
      const { call } = await keyWithGuardrail(codename('block'));
      mock.enqueue({ reply: { text: 'we call it project falcon internally' } });
      const res = await call('POST', '/chat/completions', chat('hi', { stream: true }));
      expect(res.text).not.toContain('falcon');
      const last = events(res.text).at(-1);
      expect(last.error).toEqual({ code: 403, message: 'Blocked by content filter: codename' });

      // Translated (OpenAI provider, Anthropic caller): Anthropic's error event.
      mock.enqueue({ reply: { text: 'we call it project falcon internally' } });
      const anthropic = await call('POST', '/messages', {
        model: 'test/gpt',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(anthropic.text).not.toContain('falcon');
      expect(anthropic.text).toContain('event: error');
      expect(events(anthropic.text).at(-1)).toEqual({
        type: 'error',
        error: { type: 'api_error', message: 'Blocked by content filter: codename' },
      });

      // Passed through (Anthropic provider and caller): a permission error, as for a refused request.
      mock.enqueue({ reply: { text: 'we call it project falcon internally' } });
      const lane = await call('POST', '/messages', {
        model: 'test/claude',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(lane.text).not.toContain('falcon');
      expect(events(lane.text).at(-1)).toEqual({
        type: 'error',
        error: { type: 'permission_error', message: 'Blocked by content filter: codename' },
      });
    });
  });
});
