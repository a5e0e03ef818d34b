import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compactionDraft, compactionRequest } from '../formats/compaction.js';
import { ApiError } from '../lib/errors.js';
import { CompactionService } from './service.js';

const service = new CompactionService(randomBytes(32));
const usage = { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 };
const input = [
  { role: 'user', content: 'Remember the word lighthouse.' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Noted.' }] },
  { type: 'function_call', call_id: 'c1', name: 'save', arguments: '{"word":"lighthouse"}' },
  { type: 'function_call_output', call_id: 'c1', output: 'saved' },
];

function minted(summary: string, org = 'org_a') {
  const draft = compactionDraft(
    { choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: summary } }] },
    usage,
    { input },
    'gen1',
  );
  return service.answer(draft, org) as { output: Record<string, unknown>[]; usage: unknown };
}

describe('compaction', () => {
  it('asks for a summary of the whole conversation as a transcript (tool calls and results included)', () => {
    const req = compactionRequest({ model: 'm', instructions: 'Be terse.', input });
    expect(req.messages.map((m) => m.role)).toEqual(['system', 'user']);
    const transcript = req.messages[1]?.content as string;
    for (const text of ['Be terse.', 'lighthouse.', 'Noted.', 'save (c1)', '[tool result c1]: saved'])
      expect(transcript).toContain(text);
    expect(req.tools).toBeUndefined();
  });

  it('answers the user messages then one sealed item, which opens into the summary message', () => {
    const answer = minted('The word is lighthouse.');
    expect(answer.usage).toMatchObject({ input_tokens: 10, output_tokens: 4, total_tokens: 14 });
    expect(answer.output.map((i) => i.type)).toEqual(['message', 'compaction']);
    const item = answer.output[1] as { encrypted_content: string };
    expect(item.encrypted_content).toMatch(/^gatehouse\.cp1\.v1\./);
    expect(item.encrypted_content).not.toContain('lighthouse');

    const body = { model: 'm', input: [item, { role: 'user', content: 'Which word?' }] };
    const opened = service.expand(body, 'org_a');
    expect(opened.input).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Summary of the earlier conversation:\n\nThe word is lighthouse.' },
        ],
      },
      { role: 'user', content: 'Which word?' },
    ]);
  });

  it("refuses an altered item and another organization's (400 naming it); leaves OpenAI's and plain bodies alone", () => {
    const item = minted('secret summary').output[1] as { encrypted_content: string };
    const refusal = (body: unknown, org: string) => {
      try {
        service.expand(body, org);
        return null;
      } catch (err) {
        return err as ApiError;
      }
    };
    const other = refusal({ input: [{ role: 'user', content: 'x' }, item] }, 'org_b');
    expect(other).toBeInstanceOf(ApiError);
    expect(other?.status).toBe(400);
    expect(other?.message).toContain('input[1].encrypted_content');
    const altered = { ...item, encrypted_content: `${item.encrypted_content.slice(0, -4)}AAAA` };
    expect(refusal({ input: [altered] }, 'org_a')?.status).toBe(400);
    expect(
      refusal({ input: [{ ...item, encrypted_content: 'gatehouse.cp1.nonsense' }] }, 'org_a')?.status,
    ).toBe(400);

    const openai = { input: [{ type: 'compaction', encrypted_content: 'opaque-openai' }] };
    expect(service.expand(openai, 'org_a')).toBe(openai);
    const plain = { input: 'hi' };
    expect(service.expand(plain, 'org_a')).toBe(plain);
  });
});
