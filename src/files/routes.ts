import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, badRequest, forbidden } from '../lib/errors.js';
import type { ErrorRenderer } from '../server/errors.js';
import type { OpenapiOnly } from '../server/openapi-only.js';
import type { Router } from '../server/router.js';
import { IdParams } from '../server/schemas.js';
import type { Services } from '../services.js';
import { errorKinds } from './model.js';
import type { BatchFilesService, FileObject as FileObjectView, ReceivedFile } from './openai-files.js';
import {
  FileDeleted,
  FileList,
  FileListQuery,
  FileObject,
  OpenAiError,
  UploadForm,
} from './openai-schemas.js';

const tags = ['Files'];
/** Typed apart: inferred in place, the form's schema type is too deep for TypeScript. */
const uploadDoc: OpenapiOnly = { body: UploadForm };

/** OpenAI's error object `{error: {message, type, param, code}}`: the format the `openai` client reads. */
const renderError: ErrorRenderer = ({ status, message, code }) => {
  const kinds = errorKinds(status);
  const type = status === 401 ? 'authentication_error' : kinds.type;
  return { error: { message, type, param: null, code: code ?? kinds.error_type } };
};

const errs = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, Type.Ref('OpenAiError')]));

/**
 * OpenAI's Files API for batch input files (`POST /files`, purpose `batch`), and the output and
 * error files of batches. API keys only; a file belongs to the key's workspace.
 */
export async function batchFilesRoutes(app: Router, { batchFiles }: Pick<Services, 'batchFiles'>) {
  app.addSchema(FileObject);
  app.addSchema(OpenAiError);
  const config = { auth: 'api' as const, renderError };

  // Uploads are multipart/form-data, read part by part: the file's bytes go to the database as
  // they arrive (see BatchFilesService.receive), never held whole.
  await app.register(async (scope) => {
    // Registered on the plain instance: TypeScript cannot follow the plugin's types through the
    // TypeBox provider (its instantiation is "excessively deep").
    await (scope as unknown as FastifyInstance).register(multipart, { throwFileSizeLimit: false });
    scope.post(
      '/files',
      {
        config: {
          ...config,
          openapi: uploadDoc,
        },
        schema: {
          tags,
          summary: 'Upload a batch input file (multipart/form-data: file, purpose=batch)',
          consumes: ['multipart/form-data'],
          description:
            'Each line is checked as it arrives; the first malformed one is a 400 naming its line. Up to the batch size limit (413 beyond).',
          response: { 200: Type.Ref('FileObject'), ...errs(400, 401, 403, 413, 415, 500) },
        },
      },
      (req) => upload(batchFiles, req),
    );
  });

  app.get(
    '/files',
    {
      config,
      schema: {
        tags,
        summary: "The workspace's batch files and batch output files, newest first",
        querystring: FileListQuery,
        response: { 200: FileList, ...errs(400, 401, 403, 500) },
      },
    },
    async (req) => batchFiles.list(req.caller, req.query),
  );

  app.get(
    '/files/:id',
    {
      config,
      schema: {
        tags,
        summary: 'A file',
        params: IdParams,
        response: { 200: Type.Ref(FileObject), ...errs(401, 403, 404, 500) },
      },
    },
    async (req) => batchFiles.get(req.caller, req.params.id),
  );

  app.get(
    '/files/:id/content',
    {
      config: {
        ...config,
        openapi: {
          response: {
            200: {
              description: "The file's content: JSON Lines",
              content: { 'application/jsonl': { schema: Type.String() } },
            },
          },
        },
      },
      schema: {
        tags,
        summary: "A file's content (an output file: one result per line, in request order)",
        params: IdParams,
        response: errs(401, 403, 404, 500),
      },
    },
    async (req, reply) => {
      const { filename, body } = await batchFiles.content(req.caller, req.params.id);
      reply
        .type('application/jsonl; charset=utf-8')
        .header('content-disposition', `attachment; filename="${filename.replace(/["\\\r\n]/g, '_')}"`);
      return reply.send(Readable.from(body));
    },
  );

  app.delete(
    '/files/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete an uploaded file (batches created from it keep running)',
        params: IdParams,
        response: { 200: FileDeleted, ...errs(400, 401, 403, 404, 500) },
      },
    },
    async (req) => batchFiles.delete(req.caller, req.params.id),
  );
}

function purposeError(purpose: string): ApiError {
  return badRequest(
    `Only batch files are accepted: purpose must be "batch" (got ${JSON.stringify(purpose.slice(0, 40))})`,
  );
}

/** Reads the upload form part by part; refusals are answered once the body has been read. */
async function upload(batchFiles: BatchFilesService, req: FastifyRequest): Promise<FileObjectView> {
  if (req.caller.isManagement) throw forbidden('Management keys cannot use files; use an API key');
  if (!req.isMultipart())
    throw new ApiError(415, 'Send the file as multipart/form-data with the fields file and purpose');
  const caller = req.caller;
  const fields: Record<string, string> = {};
  let received: ReceivedFile | null = null;
  let failure: unknown = null;
  let wrongPurpose: ApiError | null = null;
  const refuse = (err: unknown) => {
    failure ??= err;
  };
  try {
    // No file size limit here: the plugin's default (the JSON body limit, 1 MiB) would cut a file
    // short without a word; `receive` counts the bytes against the batch size limit (413 beyond).
    const limits = { fieldSize: 4096, fields: 20, parts: 30, fileSize: Number.POSITIVE_INFINITY };
    for await (const part of req.parts({ limits })) {
      if (part.type === 'field') {
        fields[part.fieldname] = String(part.value);
        // Whatever else was wrong, another purpose is the answer (the file may come first).
        if (part.fieldname === 'purpose' && part.value !== 'batch')
          wrongPurpose = purposeError(String(part.value));
        continue;
      }
      if (failure || wrongPurpose || part.fieldname !== 'file' || received) {
        if (!failure)
          refuse(
            badRequest(
              part.fieldname === 'file' ? 'Send one file per upload' : `Unknown file field ${part.fieldname}`,
            ),
          );
        await Readable.from(part.file).forEach(() => {});
        continue;
      }
      try {
        received = await batchFiles.receive(caller, part.filename, part.file);
      } catch (err) {
        refuse(err);
        // The rest of the body is read and dropped, so the client gets the answer.
        part.file.resume();
        await finished(part.file).catch(() => {});
      }
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    refuse(badRequest(`The multipart body is malformed: ${(err as Error).message}`));
  }
  if (wrongPurpose) failure = wrongPurpose;
  if (!failure && fields.purpose === undefined) refuse(badRequest('purpose is required: batch'));
  if (!failure && !received) refuse(badRequest('file is required: the JSONL file of requests'));
  if (
    !failure &&
    fields['expires_after[anchor]'] !== undefined &&
    fields['expires_after[anchor]'] !== 'created_at'
  )
    refuse(badRequest('expires_after[anchor] must be created_at'));
  if (failure) {
    if (received) await batchFiles.discard(received);
    throw failure;
  }
  const seconds = fields['expires_after[seconds]'];
  return batchFiles.finish(received as ReceivedFile, seconds === undefined ? null : Number(seconds));
}
