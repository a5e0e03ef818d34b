/**
 * The OpenAI Agents SDK's `OpenAIResponsesCompactionSession` through Gatehouse on a model Anthropic
 * serves: after a turn the session calls `responses.compact` (here after every turn), Gatehouse
 * summarizes the stored conversation with one call, and the next turn runs on the compacted
 * history — the summary reaches Anthropic, the compaction item does not. The SDK accepts only
 * OpenAI-style model names for compaction (`gpt-…`, `o…`): the catalog names the Anthropic-served
 * model so.
 */
import { createRequire } from 'node:module';
import {
  Agent,
  MemorySession,
  type OpenAIClient,
  OpenAIResponsesCompactionSession,
  run,
  setDefaultOpenAIClient,
  setTracingDisabled,
} from '@openai/agents';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@openai/agents-openai'));
const OpenAI = sdkRequire('openai').OpenAI as new (opts: Record<string, unknown>) => OpenAIClient;

const MODEL = 'gpt-via-claude';
const SUMMARY = 'The user is called Ada and asked for a haiku about the sea.';

describe('Agents SDK compaction session through Gatehouse (Anthropic-served model)', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let client: OpenAIClient;
  beforeAll(async () => {
    const up = await startUpstreams([
      {
        id: MODEL,
        endpoints: [
          { provider: 'anthropic', upstream_model: 'claude-x', pricing: { prompt: 1, completion: 2 } },
        ],
      },
    ]);
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    setTracingDisabled(true);
    client = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    setDefaultOpenAIClient(client);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  it('compacts after the turn (one summarizing call), and the next turn runs on the summary', async () => {
    const session = new OpenAIResponsesCompactionSession({
      client,
      model: MODEL,
      underlyingSession: new MemorySession(),
      shouldTriggerCompaction: () => true,
    });
    const agent = new Agent({ name: 'poet', model: MODEL, instructions: 'Write short poems.' });

    mock.enqueue({ reply: { text: 'Waves fold into foam.' } }, { reply: { text: SUMMARY } });
    const first = await run(agent, 'I am Ada. A haiku about the sea, please.', { session });
    expect(first.finalOutput).toBe('Waves fold into foam.');
    expect(mock.requests).toHaveLength(2);
    // The turn, then the summarizing call over the stored conversation (its answer included).
    const summarizing = wireView(mock.requests[1]!);
    expect(summarizing.system).toContain('summary');
    expect(JSON.stringify(summarizing.turns)).toContain('Waves fold into foam.');
    const items = await session.getItems();
    expect(items.map((i) => i.type)).toEqual(['message', 'compaction']);

    mock.enqueue({ reply: { text: 'Your name is Ada.' } }, { reply: { text: SUMMARY } });
    const second = await run(agent, 'What is my name?', { session });
    expect(second.finalOutput).toBe('Your name is Ada.');
    const next = JSON.stringify(mock.requests[2]?.body);
    expect(mock.requests[2]?.format).toBe('anthropic-messages');
    expect(next).toContain(SUMMARY);
    expect(next).toContain('What is my name?');
    expect(next).not.toContain('gatehouse.cp1.');
  });
});
