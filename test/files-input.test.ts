import Anthropic, { toFile as toAnthropicFile } from '@anthropic-ai/sdk';
import { OpenRouter } from '@openrouter/sdk';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, otherTenants } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/**
 * Files models read, uploaded once and named by id: with the `openai` client (purpose
 * `user_data`), Anthropic's (`beta.files`) and `@openrouter/sdk` (validated by each), stored in the
 * key's workspace, and put into the calls that name them — passed through to a provider of the
 * caller's format or translated to another's, the provider receives the file itself.
 */

const PDF = Buffer.from('%PDF-1.4\nquarterly report: revenue up 12%\n%%EOF\n');
const TEXT = 'meeting notes: ship on Friday';

describe('model input files', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let stop: () => Promise<void>;
  let png: Buffer;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3060c0' } })
      .png()
      .toBuffer();
  });
  afterAll(() => stop?.());
  beforeEach(() => {
    mock.reset();
    mock.enqueue({ reply: { text: 'It is about the quarter.' } });
  });

  it('openai: files.create (user_data) → retrieve, list, content; a chat file part and a Responses input_file name it', async () => {
    const file = await openai.files.create({
      file: await toFile(PDF, 'report.pdf', { type: 'application/pdf' }),
      purpose: 'user_data',
    });
    expect(file).toMatchObject({
      object: 'file',
      purpose: 'user_data',
      bytes: PDF.length,
      filename: 'report.pdf',
    });
    expect(file.id).toMatch(/^file-[0-9a-f]{24}$/);
    expect(await openai.files.retrieve(file.id)).toMatchObject({ id: file.id, purpose: 'user_data' });
    const listed = await openai.files.list({ purpose: 'user_data' });
    expect(listed.data.map((f) => f.id)).toContain(file.id);
    const content = await openai.files.content(file.id);
    expect(content.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await content.arrayBuffer()).equals(PDF)).toBe(true);

    // Chat Completions to an OpenAI provider (passed through): the provider gets the file's data.
    await openai.chat.completions.create({
      model: 'test/gpt',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'file', file: { file_id: file.id } },
            { type: 'text', text: 'What is this about?' },
          ],
        },
      ],
    });
    expect(mock.requests[0]?.body.messages[0].content[0]).toEqual({
      type: 'file',
      file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF.toString('base64')}` },
    });

    // Translated to Anthropic: a PDF document block.
    mock.enqueue({ reply: { text: 'ok' } });
    await openai.chat.completions.create({
      model: 'test/claude',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: file.id } }] }],
    });
    expect(mock.requests[1]?.format).toBe('anthropic-messages');
    expect(mock.requests[1]?.body.messages[0].content[0]).toMatchObject({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
    });

    // Responses: input_file and input_image by id.
    const image = await openai.files.create({ file: await toFile(png, 'dot.png'), purpose: 'vision' });
    mock.enqueue({ reply: { text: 'ok' } });
    await openai.responses.create({
      model: 'test/gpt',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', file_id: file.id },
            { type: 'input_image', file_id: image.id, detail: 'low' },
            { type: 'input_text', text: 'Compare.' },
          ],
        },
      ],
    });
    const sent = mock.requests[2]?.body.input[0].content;
    expect(sent[0]).toEqual({
      type: 'input_file',
      filename: 'report.pdf',
      file_data: `data:application/pdf;base64,${PDF.toString('base64')}`,
    });
    expect(sent[1]).toEqual({
      type: 'input_image',
      image_url: `data:image/png;base64,${png.toString('base64')}`,
      detail: 'low',
    });
  });

  it('anthropic: beta.files upload, list, metadata, download, delete; a document block names it', async () => {
    const pdf = await anthropic.beta.files.upload({
      file: await toAnthropicFile(PDF, 'report.pdf', { type: 'application/pdf' }),
    });
    expect(pdf).toMatchObject({
      type: 'file',
      filename: 'report.pdf',
      mime_type: 'application/pdf',
      size_bytes: PDF.length,
      downloadable: true,
    });
    expect(Number.isNaN(Date.parse(pdf.created_at))).toBe(false);
    const notes = await anthropic.beta.files.upload({
      file: await toAnthropicFile(Buffer.from(TEXT), 'notes.txt', { type: 'text/plain' }),
    });
    const page = await anthropic.beta.files.list({ limit: 1 });
    expect(page.data.map((f) => f.id)).toEqual([notes.id]);
    expect(page.hasNextPage()).toBe(true);
    const older = await page.getNextPage();
    expect(older.data.map((f) => f.id)).toEqual([pdf.id]);
    // Every file, page by page (newest first).
    const all: string[] = [];
    for await (const f of anthropic.beta.files.list({ limit: 1 })) all.push(f.id);
    expect(all.slice(0, 2)).toEqual([notes.id, pdf.id]);
    // Anthropic's older list parameters too: the page just before a file (newer ones).
    const newer = await fetch(`${gw.url}/api/v1/files?before_id=${pdf.id}&limit=5`, {
      headers: { authorization: `Bearer ${gw.apiKey}`, 'anthropic-version': '2023-06-01' },
    });
    expect(((await newer.json()) as { data: { id: string }[] }).data.map((f) => f.id)).toEqual([notes.id]);
    expect(await anthropic.beta.files.retrieveMetadata(pdf.id)).toMatchObject({
      id: pdf.id,
      mime_type: 'application/pdf',
    });
    const downloaded = await anthropic.beta.files.download(notes.id);
    expect(downloaded.headers.get('content-type')).toBe('text/plain');
    expect(await downloaded.text()).toBe(TEXT);

    // To an Anthropic provider (passed through): base64 and text sources in place of the file.
    await anthropic.beta.messages.create({
      model: 'test/claude',
      max_tokens: 100,
      betas: ['files-api-2025-04-14'],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'file', file_id: pdf.id }, title: 'Q3' },
            { type: 'document', source: { type: 'file', file_id: notes.id } },
            { type: 'text', text: 'Summarize.' },
          ],
        },
      ],
    });
    const [up] = mock.requests;
    expect(up?.format).toBe('anthropic-messages');
    expect(up?.body.messages[0].content.slice(0, 2)).toEqual([
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
        title: 'Q3',
      },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: TEXT } },
    ]);

    const gone = await anthropic.beta.files.delete(pdf.id);
    expect(gone).toMatchObject({ id: pdf.id, type: 'file_deleted' });
    const err = await anthropic.beta.files.retrieveMetadata(pdf.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect((err as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error' },
    });
  });

  it('@openrouter/sdk: files.upload, retrieve, list, download, delete pass its validation', async () => {
    const sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    const up = await sdk.files.upload({
      requestBody: { file: { fileName: 'notes.txt', content: Buffer.from(TEXT) } },
    });
    expect(up).toMatchObject({ shape: 'openai', purpose: 'user_data', filename: 'notes.txt' });
    const id = (up as { id: string }).id;
    expect(await sdk.files.retrieve({ fileId: id })).toMatchObject({ shape: 'openai', id });
    const list = await sdk.files.list({});
    expect((list.result as { data: { id: string }[] }).data.map((f) => f.id)).toContain(id);
    const stream = await sdk.files.download({ fileId: id });
    expect(await new Response(stream).text()).toBe(TEXT);
    expect(await sdk.files.delete({ fileId: id })).toMatchObject({ shape: 'openai', id, deleted: true });
  });

  it('a file is its workspace’s: another workspace names it in vain (404 in its format); other ids pass as they are', async () => {
    const mine = await openai.files.create({ file: await toFile(PDF, 'mine.pdf'), purpose: 'user_data' });
    const [other] = await otherTenants(gw, 'Files neighbours', 0);
    const theirs = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: other?.key, maxRetries: 0 });
    const read = await theirs.files.retrieve(mine.id).catch((e: unknown) => e);
    expect(read).toBeInstanceOf(OpenAI.NotFoundError);
    const used = await theirs.chat.completions
      .create({
        model: 'test/gpt',
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: mine.id } }] }],
      })
      .catch((e: unknown) => e);
    expect(used).toBeInstanceOf(OpenAI.NotFoundError);
    expect(mock.requests).toHaveLength(0);
    // Not an id Gatehouse makes: the provider's own, passed through untouched.
    await openai.chat.completions.create({
      model: 'test/gpt',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-AbC123providerOwn' } }] }],
    });
    expect(mock.requests[0]?.body.messages[0].content[0]).toEqual({
      type: 'file',
      file: { file_id: 'file-AbC123providerOwn' },
    });
    // Uploads: another purpose is refused; too large is a 413.
    const refused = await openai.files
      .create({ file: await toFile(PDF, 'x.pdf'), purpose: 'fine-tune' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    const mgmt = await client(gw.url, gw.managementKey)('GET', '/files');
    expect(mgmt.status).toBe(403);
  });
});

describe.each(databases)('model input files stored (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  it('keeps the bytes whole across chunks, lists by purpose, and inlines them for the owner only', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    // Over two stored chunks (768 KiB each), of every byte value.
    const big = Buffer.alloc(1_000_003, 0);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 256;
    const file = await openai.files.create({ file: await toFile(big, 'blob.bin'), purpose: 'assistants' });
    expect(file).toMatchObject({ bytes: big.length, purpose: 'assistants' });
    const back = Buffer.from(await (await openai.files.content(file.id)).arrayBuffer());
    expect(back.equals(big)).toBe(true);
    const owner = {
      organizationId: gw.organizationId,
      workspaceId: (await client(gw.url, gw.apiKey)('GET', '/key')).body.data.workspace_id,
    };
    const inline = await gw.services.inputFiles.inline(owner, file.id);
    expect(inline).toMatchObject({ filename: 'blob.bin', mimeType: 'application/octet-stream' });
    expect(inline?.base64).toBe(big.toString('base64'));
    expect(await gw.services.inputFiles.inline({ ...owner, workspaceId: 'another' }, file.id)).toBeNull();
    // Purposes list apart; a batch file is no model input.
    const batch = await openai.files.create({
      file: await toFile(
        Buffer.from('{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n'),
        'b.jsonl',
      ),
      purpose: 'batch',
    });
    expect((await openai.files.list({ purpose: 'assistants' })).data.map((f) => f.id)).toEqual([file.id]);
    expect((await openai.files.list()).data.map((f) => f.id)).toEqual([batch.id, file.id]);
    expect(await gw.services.inputFiles.inline(owner, batch.id)).toBeNull();
    await openai.files.delete(file.id);
    expect(await gw.services.inputFiles.inline(owner, file.id)).toBeNull();
  });

  it('a deleted workspace takes its uploaded files with it', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const ws = (await mgmt('POST', '/workspaces', { name: 'Gone', slug: `gone-${db}` })).body.data
      .id as string;
    const key = await mgmt('POST', '/keys', { name: 'gone', workspace_id: ws });
    const theirs = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: key.body.key, maxRetries: 0 });
    await theirs.files.create({ file: await toFile(PDF, 'a.pdf'), purpose: 'user_data' });
    await theirs.files.create({
      file: await toFile(
        Buffer.from('{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n'),
        'b.jsonl',
      ),
      purpose: 'batch',
    });
    const count = async (table: 'batch_files' | 'batch_file_chunks') =>
      table === 'batch_files'
        ? (
            await gw.services.db
              .selectFrom('batch_files')
              .select('id')
              .where('workspace_id', '=', ws)
              .execute()
          ).length
        : (
            await gw.services.db
              .selectFrom('batch_file_chunks')
              .select('file_id')
              .where('file_id', 'in', (eb) =>
                eb.selectFrom('batch_files').select('id').where('workspace_id', '=', ws),
              )
              .execute()
          ).length;
    expect(await count('batch_files')).toBe(2);
    expect(await count('batch_file_chunks')).toBe(2);
    const chunksBefore = (await gw.services.db.selectFrom('batch_file_chunks').select('file_id').execute())
      .length;
    expect((await mgmt('PATCH', `/keys/${key.body.data.hash}`, { disabled: true })).status).toBe(200);
    expect((await mgmt('DELETE', `/workspaces/${ws}`)).status).toBe(200);
    expect(await count('batch_files')).toBe(0);
    // Only its chunks went: every other file's stay.
    expect((await gw.services.db.selectFrom('batch_file_chunks').select('file_id').execute()).length).toBe(
      chunksBefore - 2,
    );
  });
});
