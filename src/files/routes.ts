import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorKinds } from '../batches/model.js';
import { type BatchFilesService, expiryOf, uploadedView } from '../batches/openai-files.js';
import {
  FileDeleted,
  FileList,
  FileListQuery,
  FileObject,
  OpenAiError,
  UploadForm,
} from '../batches/openai-schemas.js';
import { WIRES } from '../inference/wires/index.js';
import { ApiError, badRequest, forbidden } from '../lib/errors.js';
import { TempFiles } from '../lib/temp-files.js';
import type { ErrorRenderer } from '../server/errors.js';
import type { OpenapiOnly } from '../server/openapi-only.js';
import type { Router } from '../server/router.js';
import { IdParams } from '../server/schemas.js';
import type { Services } from '../services.js';
import { INPUT_PURPOSES, type InputFiles, isInputPurpose } from './input-files.js';
import { readUploadForm } from './upload.js';
import {
  AnthropicFile,
  AnthropicFileList,
  anthropicDeleted,
  anthropicFile,
  isAnthropicClient,
  openAiDeleted,
  openAiFile,
} from './views.js';

const tags = ['Files'];

/**
 * Errors in the asking client's format: Anthropic's error object for Anthropic's clients, else
 * OpenAI's `{error: {message, type, param, code}}` (what the `openai` client and `@openrouter/sdk` read).
 */
const renderError: ErrorRenderer = (parts, req) => {
  if (isAnthropicClient(req.headers)) return WIRES.messages.renderError(parts, req);
  const kinds = errorKinds(parts.status);
  const type = parts.status === 401 ? 'authentication_error' : kinds.type;
  return { error: { message: parts.message, type, param: null, code: parts.code ?? kinds.error_type } };
};

/** Error answers: OpenAI's object, or Anthropic's for its clients. */
const errs = (...codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [c, Type.Union([Type.Ref('OpenAiError'), WIRES.messages.errorSchema])]),
  );
const oneFile: OpenapiOnly = {
  response: { 200: Type.Union([Type.Ref(FileObject), Type.Ref(AnthropicFile)]) },
};

export interface FilesDeps {
  batchFiles: BatchFilesService;
  inputFiles: InputFiles;
  config: Pick<Services['config'], 'filesMaxBytes' | 'batches'>;
}

/**
 * The Files API: OpenAI's (batch input files, purpose `batch`; model input files, purposes
 * `user_data`, `assistants`, `vision`), Anthropic's and OpenRouter's (files a model reads, no
 * purpose). One store and one id space: a file is its key's workspace's, listed, read, downloaded
 * and deleted the same whichever client uploaded it; the answer takes the asking client's shape.
 * Batch output and error files are derived from their batches' results. API keys only.
 */
export async function filesRoutes(app: Router, deps: Pick<Services, 'batchFiles' | 'inputFiles' | 'config'>) {
  const { batchFiles, inputFiles, config } = deps;
  app.addSchema(FileObject);
  app.addSchema(OpenAiError);
  app.addSchema(AnthropicFile);
  const routeConfig = { auth: 'api' as const, renderError };

  await app.register(async (scope) => {
    // Registered on the plain instance: TypeScript cannot follow the plugin's types through the
    // TypeBox provider (its instantiation is "excessively deep").
    await (scope as unknown as FastifyInstance).register(multipart, { throwFileSizeLimit: false });
    scope.post(
      '/files',
      {
        config: { ...routeConfig, openapi: { body: UploadForm, ...oneFile } as OpenapiOnly },
        schema: {
          tags,
          summary: 'Upload a file (multipart/form-data: file, and purpose)',
          consumes: ['multipart/form-data'],
          description: `purpose \`batch\`: a batch's requests, JSON Lines, each line checked (the first malformed one is a 400 naming it), up to the batch size limit. \`${INPUT_PURPOSES.join('`, `')}\` or none (Anthropic's and OpenRouter's clients send none): a file models read, named by its id in a call's file, input_file, input_image, document or image part, up to GATEHOUSE_FILES_MAX_BYTES.`,
          response: errs(400, 401, 403, 413, 415, 500),
        },
      },
      async (req) => upload({ batchFiles, inputFiles, config }, req),
    );
  });

  app.get(
    '/files',
    {
      config: {
        ...routeConfig,
        openapi: { response: { 200: Type.Union([FileList, AnthropicFileList]) } },
      },
      schema: {
        tags,
        summary: "The workspace's files, newest first (batch, model input and batch output files)",
        description:
          "Anthropic's clients get Anthropic's list of the files models read (`page` or `after_id`, `before_id`, `limit` 1–1000, default 20; `next_page` continues).",
        querystring: Type.Intersect([
          FileListQuery,
          Type.Object({
            after_id: Type.Optional(Type.String()),
            before_id: Type.Optional(Type.String()),
            page: Type.Optional(
              Type.String({ description: "Anthropic's cursor: a previous page's next_page" }),
            ),
          }),
        ]),
        response: errs(400, 401, 403, 500),
      },
    },
    async (req) => {
      if (!isAnthropicClient(req.headers)) {
        const list = await batchFiles.list(req.caller, req.query);
        return { ...list, _shape: 'openai', data: list.data.map(openAiFile) };
      }
      const q = req.query;
      const limit = q.limit ?? 20;
      if (limit > 1000) throw badRequest('limit must be at most 1000');
      // A page cursor is the last file shown: the next page is the one after it.
      const afterId = q.after_id ?? q.page;
      const page = await inputFiles.list(req.caller, { afterId, beforeId: q.before_id, limit });
      const data = page.rows.map((r) => anthropicFile(r.view, r.mimeType));
      const lastId = data[data.length - 1]?.id ?? null;
      return {
        _shape: 'anthropic',
        data,
        has_more: page.hasMore,
        first_id: data[0]?.id ?? null,
        last_id: lastId,
        next_page: page.hasMore && q.before_id === undefined ? lastId : null,
      };
    },
  );

  app.get(
    '/files/:id',
    {
      config: { ...routeConfig, openapi: oneFile },
      schema: { tags, summary: 'A file', params: IdParams, response: errs(401, 403, 404, 500) },
    },
    async (req) => {
      const { view, mimeType } = await batchFiles.record(req.caller, req.params.id);
      return isAnthropicClient(req.headers) ? anthropicFile(view, mimeType) : openAiFile(view);
    },
  );

  app.get(
    '/files/:id/content',
    {
      config: {
        ...routeConfig,
        openapi: {
          response: {
            200: {
              description: "The file's bytes (a batch's output file: one result per line, in request order)",
              content: { 'application/octet-stream': { schema: Type.String({ format: 'binary' }) } },
            },
          },
        },
      },
      schema: {
        tags,
        summary: "A file's content",
        params: IdParams,
        response: errs(401, 403, 404, 500),
      },
    },
    async (req, reply) => {
      const { filename, mimeType, body } = await batchFiles.content(req.caller, req.params.id);
      // A model input file's bytes: its own type to Anthropic's clients, else OpenAI's (and the
      // type `@openrouter/sdk` takes nothing but) `application/octet-stream`.
      const binary = isAnthropicClient(req.headers) ? mimeType : 'application/octet-stream';
      reply
        .type(mimeType === null ? 'application/jsonl; charset=utf-8' : (binary as string))
        .header('content-disposition', `attachment; filename="${filename.replace(/["\\\r\n]/g, '_')}"`);
      return reply.send(Readable.from(body));
    },
  );

  app.delete(
    '/files/:id',
    {
      config: { ...routeConfig, openapi: { response: { 200: FileDeleted } } },
      schema: {
        tags,
        summary: 'Delete an uploaded file (batches created from it keep running)',
        params: IdParams,
        response: errs(400, 401, 403, 404, 500),
      },
    },
    async (req) => {
      const { id } = await batchFiles.delete(req.caller, req.params.id);
      return isAnthropicClient(req.headers) ? anthropicDeleted(id) : openAiDeleted(id);
    },
  );
}

const tooLarge = (max: number, setting: string) =>
  new ApiError(413, `The file is larger than ${max} bytes, the most an upload takes (${setting})`);

/** Reads the upload form, then stores its file as its purpose says: a batch file or a model input file. */
async function upload(deps: FilesDeps, req: FastifyRequest): Promise<unknown> {
  const { batchFiles, inputFiles, config } = deps;
  if (req.caller.isManagement) throw forbidden('Management keys cannot use files; use an API key');
  if (!req.isMultipart()) throw new ApiError(415, 'Send the file as multipart/form-data with the field file');
  const temp = new TempFiles('files');
  try {
    const most = Math.max(config.batches.maxBytes, config.filesMaxBytes);
    const { fields, file } = await readUploadForm(req, temp, most, (max) =>
      tooLarge(max, 'GATEHOUSE_BATCH_MAX_BYTES, GATEHOUSE_FILES_MAX_BYTES'),
    );
    const purpose = fields.purpose;
    if (purpose !== undefined && purpose !== 'batch' && !isInputPurpose(purpose))
      throw badRequest(
        `purpose must be batch, ${INPUT_PURPOSES.join(', ')} (got ${JSON.stringify(purpose.slice(0, 40))})`,
      );
    if (!file) throw badRequest('file is required');
    const anchor = fields['expires_after[anchor]'];
    if (anchor !== undefined && anchor !== 'created_at')
      throw badRequest('expires_after[anchor] must be created_at');
    const seconds = fields['expires_after[seconds]'];
    const expiresAfter = seconds === undefined ? null : Number(seconds);
    if (purpose === 'batch') {
      const received = await batchFiles.receive(req.caller, file.filename, createReadStream(file.path));
      return openAiFile(await batchFiles.finish(received, expiresAfter));
    }
    if (file.bytes > config.filesMaxBytes) throw tooLarge(config.filesMaxBytes, 'GATEHOUSE_FILES_MAX_BYTES');
    const expiresAt = expiryOf(expiresAfter, Math.floor(Date.now() / 1000));
    const stored = await inputFiles.store(req.caller, file, purpose ?? 'user_data', expiresAt);
    const view = uploadedView(stored);
    return isAnthropicClient(req.headers) ? anthropicFile(view, stored.mime_type) : openAiFile(view);
  } finally {
    await temp.cleanup();
  }
}
