/**
 * Compaction of a Responses conversation (`POST /responses/compact`) on a provider without
 * OpenAI's compact endpoint: the summarizing request built from the caller's body, the answer
 * drafted from the model's summary, and the message a Gatehouse compaction item becomes in a later
 * call. Pure: sealing the summary into `encrypted_content` is the compaction service's.
 */
import type { ChatMessage, ChatRequest, ChatResponse, ContentPart, Usage } from './chat.js';
import { responsesRequestToChat } from './responses.js';
import { isObj, type Obj } from './validate.js';

const SUMMARIZER = [
  'You compact conversations so that they can continue in a smaller context.',
  'Write a summary of the conversation you are given that lets the assistant continue it without',
  "the original: the user's goals and constraints, what was decided and done, facts and results",
  'learned (tool results included), open questions, and where the work stands now.',
  'Write only the summary, in the language of the conversation.',
].join(' ');

/** A content's text; parts that are not text are named, so the summary knows they were there. */
function contentText(content: ChatMessage['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((p: ContentPart) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('\n');
}

/** One message as a line of the transcript the summarizer reads. */
function transcriptEntry(m: ChatMessage): string {
  const lines: string[] = [];
  const text = contentText(m.content);
  if (m.role === 'tool') lines.push(`[tool result ${m.tool_call_id ?? ''}]: ${text}`);
  else if (text) lines.push(`[${m.role}]: ${text}`);
  for (const c of m.tool_calls ?? [])
    lines.push(`[assistant called ${c.function.name} (${c.id})]: ${c.function.arguments}`);
  return lines.join('\n');
}

/**
 * The one model call that compacts `body` (`input` and `instructions`; stored state already
 * expanded): the conversation as a transcript in one user message, under a summarizing system
 * prompt. A transcript rather than the turns themselves: tool calls in history would need their
 * tools declared (Anthropic refuses them otherwise), and the model must write about the
 * conversation, not continue it.
 */
export function compactionRequest(body: Obj): ChatRequest {
  const chat = responsesRequestToChat({
    model: body.model,
    input: body.input,
    ...(body.instructions !== undefined ? { instructions: body.instructions } : {}),
  });
  const transcript = chat.messages.map(transcriptEntry).filter(Boolean).join('\n\n');
  return {
    model: chat.model,
    messages: [
      { role: 'system', content: SUMMARIZER },
      { role: 'user', content: `<conversation>\n${transcript}\n</conversation>\n\nSummarize it.` },
    ],
  };
}

/** The user messages of `input`, as OpenAI's compaction answer lists them before its item. */
function userMessages(input: unknown, id: string): Obj[] {
  if (typeof input === 'string')
    return [
      { id: `msg_${id}_0`, type: 'message', status: 'completed', role: 'user', content: inputText(input) },
    ];
  if (!Array.isArray(input)) return [];
  return input.flatMap((item, i): Obj[] => {
    if (!isObj(item) || (item.type ?? 'message') !== 'message' || item.role !== 'user') return [];
    const content = typeof item.content === 'string' ? inputText(item.content) : item.content;
    return [{ id: `msg_${id}_${i}`, type: 'message', status: 'completed', role: 'user', content }];
  });
}

const inputText = (text: string) => [{ type: 'input_text', text }];

/** A compaction answer before its summary is sealed: `summary` becomes the compaction item. */
export interface CompactionDraft {
  id: string;
  created_at: number;
  /** The input's user messages. */
  messages: Obj[];
  summary: string;
  usage: Obj;
}

/** The draft of a translated compaction answer (`id`: the generation's). */
export function compactionDraft(
  response: Pick<ChatResponse, 'choices'>,
  usage: Usage,
  body: Obj,
  id: string,
): CompactionDraft {
  const summary = contentText(response.choices[0]?.message.content ?? null).trim();
  return {
    id: `cmp_${id}`,
    created_at: Math.floor(Date.now() / 1000),
    messages: userMessages(body.input, id),
    summary,
    usage: {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
      total_tokens: usage.total_tokens,
    },
  };
}

/** The answer: the user messages, then the one compaction item carrying the sealed summary. */
export const compactionAnswer = (draft: CompactionDraft, sealed: string): Obj => ({
  id: draft.id,
  object: 'response.compaction',
  created_at: draft.created_at,
  output: [
    ...draft.messages,
    { id: `${draft.id}_item`, type: 'compaction', encrypted_content: sealed, created_by: 'gatehouse' },
  ],
  usage: draft.usage,
});
