import { Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';

/** Wire schemas of OpenAI's Files API and of the Batch object's OpenAI fields. */

const Int = Type.Integer();
const Str = Type.String();

/** Carried by every batch (null where they do not apply: an inline batch has no input file). */
export const OpenAiBatchFields = Type.Object({
  input_file_id: Nullable(Str),
  output_file_id: Nullable(
    Type.String({ description: 'Once final: the successful result lines (GET /files/{id}/content)' }),
  ),
  error_file_id: Nullable(Type.String({ description: 'Once final: the failed result lines' })),
  errors: Nullable(
    Type.Object({
      object: Type.Literal('list'),
      data: Type.Array(Type.Object({ code: Str, message: Str, param: Nullable(Str), line: Nullable(Int) })),
    }),
  ),
  metadata: Nullable(Type.Record(Str, Str)),
  completed_at: Nullable(Type.Integer({ description: 'Unix seconds' })),
  failed_at: Nullable(Int),
  expired_at: Nullable(Int),
  cancelled_at: Nullable(Int),
});

export const FileObject = Type.Object(
  {
    id: Str,
    object: Type.Literal('file'),
    bytes: Int,
    created_at: Type.Integer({ description: 'Unix seconds' }),
    filename: Str,
    purpose: Type.Union([Type.Literal('batch'), Type.Literal('batch_output')]),
    status: Type.Literal('processed'),
    expires_at: Nullable(Int),
    status_details: Nullable(Str),
  },
  { $id: 'FileObject' },
);

export const FileList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Ref(FileObject)),
  has_more: Type.Boolean(),
  first_id: Nullable(Str),
  last_id: Nullable(Str),
});

export const FileDeleted = Type.Object({
  id: Str,
  object: Type.Literal('file'),
  deleted: Type.Literal(true),
});

export const FileListQuery = Type.Object({
  after: Type.Optional(Type.String({ description: 'A file id: the page starts after it' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, default: 10000 })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  purpose: Type.Optional(Type.String({ description: 'batch (uploads) or batch_output (batch results)' })),
});

/** OpenAI's error object, the error format of the /files routes. */
export const OpenAiError = Type.Object(
  {
    error: Type.Object({
      message: Str,
      type: Str,
      param: Nullable(Str),
      code: Nullable(Str),
    }),
  },
  { $id: 'OpenAiError', title: 'OpenAI error' },
);

/** The upload form (documented; read part by part, not compiled). */
export const UploadForm = Type.Object({
  file: Type.String({
    format: 'binary',
    description: 'JSON Lines: one {custom_id, method: "POST", url, body} per line',
  }),
  purpose: Type.Literal('batch'),
  'expires_after[anchor]': Type.Optional(Type.Literal('created_at')),
  'expires_after[seconds]': Type.Optional(Type.Integer({ minimum: 3600, maximum: 2592000 })),
});
