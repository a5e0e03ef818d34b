import { describe, expect, it } from 'vitest';
import { type InlineFile, inlineFiles } from './references.js';

const PDF_ID = `file-${'a'.repeat(24)}`;
const TXT_ID = `file-${'b'.repeat(24)}`;
const PNG_ID = `file-${'c'.repeat(24)}`;
const files: Record<string, InlineFile> = {
  [PDF_ID]: { id: PDF_ID, filename: 'r.pdf', mimeType: 'application/pdf', base64: 'JVBERi0=' },
  [TXT_ID]: {
    id: TXT_ID,
    filename: 'n.txt',
    mimeType: 'text/plain',
    base64: Buffer.from('notes').toString('base64'),
  },
  [PNG_ID]: { id: PNG_ID, filename: 'd.png', mimeType: 'image/png', base64: 'iVBORw==' },
};
const load = async (id: string) => files[id] ?? null;

describe('inlineFiles', () => {
  it('returns the very body when it names no file of Gatehouse’s, without a lookup', async () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-providerOwn123' } }] }],
    };
    const never = async () => {
      throw new Error('looked up');
    };
    expect(await inlineFiles('chat', body, never)).toBe(body);
    expect(await inlineFiles('responses', { input: 'hi' }, never)).toEqual({ input: 'hi' });
  });

  it('chat: a PDF as file_data, an image as image_url; the body it came from is unchanged', async () => {
    const part = { type: 'file', file: { file_id: PDF_ID } };
    const body = {
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [part, { type: 'file', file: { file_id: PNG_ID } }, { type: 'text', text: 'x' }],
        },
      ],
    };
    const out = (await inlineFiles('chat', body, load)) as typeof body;
    expect(out.messages[1]?.content).toEqual([
      { type: 'file', file: { filename: 'r.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw==' } },
      { type: 'text', text: 'x' },
    ]);
    expect(part).toEqual({ type: 'file', file: { file_id: PDF_ID } });
  });

  it('messages: documents and images, tool results’ too; plain text as a text source', async () => {
    const body = {
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              source: { type: 'file', file_id: TXT_ID },
              title: 'Notes',
              cache_control: { type: 'ephemeral' },
            },
            {
              type: 'tool_result',
              tool_use_id: 't1',
              content: [{ type: 'image', source: { type: 'file', file_id: PNG_ID } }],
            },
          ],
        },
      ],
    };
    const out = (await inlineFiles('messages', body, load)) as { messages: { content: unknown[] }[] };
    expect(out.messages[0]?.content).toEqual([
      {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: 'notes' },
        title: 'Notes',
        cache_control: { type: 'ephemeral' },
      },
      {
        type: 'tool_result',
        tool_use_id: 't1',
        content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw==' } }],
      },
    ]);
  });

  it('an id of Gatehouse’s the workspace does not hold is a 404', async () => {
    const missing = `file-${'d'.repeat(24)}`;
    await expect(
      inlineFiles(
        'responses',
        { input: [{ role: 'user', content: [{ type: 'input_file', file_id: missing }] }] },
        load,
      ),
    ).rejects.toMatchObject({ status: 404 });
  });
});
