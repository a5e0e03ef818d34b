import { describe, expect, it } from 'vitest';
import { toAnthropicRequest } from '../providers/anthropic/wire.js';
import { toConverseRequest } from '../providers/bedrock/converse.js';
import { toGeminiRequest } from '../providers/google/wire.js';
import { toOpenAiRequest } from '../providers/openai/wire.js';
import { assertTranslatable } from './capabilities.js';
import { type ChatRequest, type ContentPart, TranslationError } from './chat.js';
import { chatRequestFromBody } from './chat-edge.js';
import { messagesRequestToChat } from './messages.js';
import { responsesRequestToChat } from './responses.js';

/** Documents (PDFs, text files) read from each caller format and written in each provider's. */

const PDF = Buffer.from('%PDF-1.4 a tiny document').toString('base64');
const PDF_URL = `data:application/pdf;base64,${PDF}`;
const TEXT = 'line one\nline two ✓';
const TEXT_URL = `data:text/plain;base64,${Buffer.from(TEXT).toString('base64')}`;

const userParts = (req: ChatRequest): ContentPart[] =>
  req.messages.find((m) => m.role === 'user')?.content as ContentPart[];
const withParts = (content: ContentPart[]): ChatRequest => ({
  model: 'm',
  messages: [{ role: 'user', content }],
});

describe('documents at the edge', () => {
  it('Chat Completions: file parts with data, a URL or a file id', () => {
    const req = chatRequestFromBody({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'summarize' },
            {
              type: 'file',
              file: { filename: 'report.pdf', file_data: PDF_URL },
              cache_control: { type: 'ephemeral' },
            },
            { type: 'file', file: { file_data: 'https://example.com/a.pdf' } },
            { type: 'file', file: { file_id: 'file-abc' } },
          ],
        },
      ],
    });
    expect(userParts(req).slice(1)).toEqual([
      {
        type: 'file',
        file: { filename: 'report.pdf', file_data: PDF_URL },
        cache_control: { type: 'ephemeral' },
      },
      { type: 'file', file: { file_data: 'https://example.com/a.pdf' } },
      { type: 'file', file: { file_id: 'file-abc' } },
    ]);
  });

  it('Messages: base64, text, URL and content documents; title and context kept; cache breakpoint on the file', () => {
    const req = messagesRequestToChat({
      model: 'm',
      max_tokens: 10,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              source: { type: 'base64', media_type: 'application/pdf', data: PDF },
              title: 'report.pdf',
              context: 'the quarterly report',
              cache_control: { type: 'ephemeral' },
            },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: TEXT } },
            { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
            { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'custom' }] } },
            { type: 'text', text: 'compare them' },
          ],
        },
      ],
    });
    expect(userParts(req)).toEqual([
      { type: 'text', text: 'the quarterly report' },
      {
        type: 'file',
        file: { filename: 'report.pdf', file_data: PDF_URL },
        cache_control: { type: 'ephemeral' },
      },
      { type: 'file', file: { file_data: TEXT_URL } },
      { type: 'file', file: { file_data: 'https://example.com/a.pdf' } },
      { type: 'text', text: 'custom' },
      { type: 'text', text: 'compare them' },
    ]);
  });

  it('Messages: a document in a tool result', () => {
    const req = messagesRequestToChat({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'read it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'fetch', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [
                { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
              ],
            },
          ],
        },
      ],
    });
    expect(req.messages.at(-1)).toMatchObject({
      role: 'tool',
      content: [{ type: 'file', file: { file_data: PDF_URL } }],
    });
  });

  it('Responses: input_file with file_data, file_url or file_id', () => {
    const req = responsesRequestToChat({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', filename: 'report.pdf', file_data: PDF_URL },
            { type: 'input_file', file_url: 'https://example.com/a.pdf' },
            { type: 'input_file', file_id: 'file-abc' },
            { type: 'input_text', text: 'summarize' },
          ],
        },
      ],
    });
    expect(userParts(req).slice(0, 3)).toEqual([
      { type: 'file', file: { filename: 'report.pdf', file_data: PDF_URL } },
      { type: 'file', file: { file_data: 'https://example.com/a.pdf' } },
      { type: 'file', file: { file_id: 'file-abc' } },
    ]);
  });
});

describe('documents on each provider wire', () => {
  const req = withParts([
    {
      type: 'file',
      file: { filename: 'report.pdf', file_data: PDF_URL },
      cache_control: { type: 'ephemeral' },
    },
    { type: 'file', file: { filename: 'notes.txt', file_data: TEXT_URL } },
    { type: 'text', text: 'summarize' },
  ]);

  it('OpenAI Chat Completions: a PDF as a file part (named), a text file as its text, no cache_control', () => {
    const body = toOpenAiRequest(req, 'openai', false) as { messages: { content: unknown }[] };
    expect(body.messages[0]?.content).toEqual([
      { type: 'file', file: { filename: 'report.pdf', file_data: PDF_URL } },
      { type: 'text', text: TEXT },
      { type: 'text', text: 'summarize' },
    ]);
    const unnamed = toOpenAiRequest(
      withParts([{ type: 'file', file: { file_data: PDF_URL } }]),
      'openai',
      false,
    ) as {
      messages: { content: { file: unknown }[] }[];
    };
    expect(unnamed.messages[0]?.content[0]?.file).toEqual({ filename: 'document.pdf', file_data: PDF_URL });
  });

  it('Anthropic: document blocks (PDF base64 with its title and breakpoint, text as text, URL as url)', () => {
    const body = toAnthropicRequest(
      withParts([
        ...(req.messages[0]?.content as ContentPart[]),
        { type: 'file', file: { file_data: 'https://x.test/a.pdf' } },
      ]),
      false,
    ) as { messages: { content: unknown[] }[] };
    expect(body.messages[0]?.content).toEqual([
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
      { type: 'text', text: 'summarize' },
      { type: 'document', source: { type: 'url', url: 'https://x.test/a.pdf' } },
    ]);
  });

  it('Anthropic refuses what it cannot read: a file id, an unsupported media type', () => {
    expect(() =>
      toAnthropicRequest(withParts([{ type: 'file', file: { file_id: 'file-1' } }]), false),
    ).toThrow(TranslationError);
    expect(() =>
      toAnthropicRequest(
        withParts([{ type: 'file', file: { file_data: 'data:application/zip;base64,UEs=' } }]),
        false,
      ),
    ).toThrow(/application\/zip/);
  });

  it('Gemini: inline data for both, file data for a URL', () => {
    const body = toGeminiRequest(
      withParts([
        ...(req.messages[0]?.content as ContentPart[]),
        { type: 'file', file: { file_data: 'https://x.test/a.pdf' } },
      ]),
    ) as { contents: { parts: unknown[] }[] };
    expect(body.contents[0]?.parts).toEqual([
      { inlineData: { mimeType: 'application/pdf', data: PDF } },
      { inlineData: { mimeType: 'text/plain', data: Buffer.from(TEXT).toString('base64') } },
      { text: 'summarize' },
      { fileData: { mimeType: 'application/pdf', fileUri: 'https://x.test/a.pdf' } },
    ]);
  });

  it('Bedrock Converse: document blocks with names it accepts, made unique; a cache point after the breakpoint', () => {
    const body = toConverseRequest(
      withParts([
        ...(req.messages[0]?.content as ContentPart[]),
        { type: 'file', file: { filename: 'report.pdf', file_data: PDF_URL } },
      ]),
      { anthropic: true },
    ) as { messages: { content: unknown[] }[] };
    expect(body.messages[0]?.content).toEqual([
      { document: { format: 'pdf', name: 'report', source: { bytes: PDF } } },
      { cachePoint: { type: 'default' } },
      { document: { format: 'txt', name: 'notes', source: { bytes: Buffer.from(TEXT).toString('base64') } } },
      { text: 'summarize' },
      { document: { format: 'pdf', name: 'report (2)', source: { bytes: PDF } } },
    ]);
  });

  it('documents in tool results reach every provider: in the tool result, or in the user turn after it', () => {
    const toolReq: ChatRequest = {
      model: 'm',
      messages: [
        { role: 'user', content: 'read it' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'fetch', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 't1', content: [{ type: 'file', file: { file_data: PDF_URL } }] },
      ],
    };
    for (const kind of ['openai', 'google', 'anthropic'] as const)
      expect(() => assertTranslatable(toolReq, kind)).not.toThrow();
    const anthropic = toAnthropicRequest(toolReq, false) as {
      messages: { content: { content?: unknown }[] }[];
    };
    expect(anthropic.messages.at(-1)?.content[0]?.content).toEqual([
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
    ]);
    const openai = toOpenAiRequest(toolReq, 'openai', false) as { messages: unknown[] };
    expect(openai.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 't1', content: '(document attached below)' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Attached to the result of tool call t1 (fetch):' },
          { type: 'file', file: { filename: 'document.pdf', file_data: PDF_URL } },
        ],
      },
    ]);
    const gemini = toGeminiRequest(toolReq) as { contents: unknown[] };
    expect(gemini.contents.at(-1)).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'fetch', response: { result: '(document attached below)' } } },
        { text: 'Attached to the result of tool call t1 (fetch):' },
        { inlineData: { mimeType: 'application/pdf', data: PDF } },
      ],
    });
  });

  it('Bedrock Converse: documents in tool results stay there, their names unique across the request', () => {
    const body = toConverseRequest(
      {
        model: 'm',
        messages: [
          { role: 'user', content: [{ type: 'file', file: { filename: 'r.pdf', file_data: PDF_URL } }] },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'fetch', arguments: '{}' } }],
          },
          {
            role: 'tool',
            tool_call_id: 't1',
            content: [
              { type: 'text', text: 'here' },
              { type: 'file', file: { filename: 'r.pdf', file_data: PDF_URL } },
            ],
          },
        ],
      },
      { anthropic: true },
    ) as { messages: { content: unknown[] }[] };
    expect(body.messages.at(-1)?.content).toEqual([
      {
        toolResult: {
          toolUseId: 't1',
          content: [{ text: 'here' }, { document: { format: 'pdf', name: 'r (2)', source: { bytes: PDF } } }],
        },
      },
    ]);
  });
});
