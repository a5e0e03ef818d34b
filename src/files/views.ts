import { Type } from '@sinclair/typebox';
import type { FileObject } from '../batches/openai-files.js';
import { Nullable } from '../server/schemas.js';

/**
 * The Files API answers in the shape of the client that asks: OpenAI's File objects, or Anthropic's
 * file metadata for Anthropic's clients (their `anthropic-version` header). Each carries `_shape`,
 * as OpenRouter's Files API does, which `@openrouter/sdk` reads to tell them apart.
 */

export const isAnthropicClient = (headers: Record<string, unknown>): boolean =>
  typeof headers['anthropic-version'] === 'string';

export const openAiFile = (view: FileObject) => ({ ...view, _shape: 'openai' as const });

/** Anthropic's file metadata: ISO times, the media type, `downloadable` (Gatehouse serves every file's content). */
export const anthropicFile = (view: FileObject, mimeType: string | null) => ({
  _shape: 'anthropic' as const,
  id: view.id,
  type: 'file' as const,
  filename: view.filename,
  mime_type: mimeType ?? 'application/jsonl',
  size_bytes: view.bytes,
  created_at: new Date(view.created_at * 1000).toISOString(),
  downloadable: true,
});

export const openAiDeleted = (id: string) => ({
  _shape: 'openai' as const,
  id,
  object: 'file' as const,
  deleted: true as const,
});
export const anthropicDeleted = (id: string) => ({
  _shape: 'anthropic' as const,
  id,
  type: 'file_deleted' as const,
});

/** Documented only (the answer is sent as made): Anthropic's file metadata. */
export const AnthropicFile = Type.Object(
  {
    _shape: Type.Literal('anthropic'),
    id: Type.String(),
    type: Type.Literal('file'),
    filename: Type.String(),
    mime_type: Type.String(),
    size_bytes: Type.Integer(),
    created_at: Type.String({ description: 'ISO 8601' }),
    downloadable: Type.Boolean(),
  },
  { $id: 'AnthropicFile', title: 'Anthropic file' },
);

export const AnthropicFileList = Type.Object({
  data: Type.Array(Type.Ref(AnthropicFile)),
  has_more: Type.Boolean(),
  first_id: Nullable(Type.String()),
  last_id: Nullable(Type.String()),
  next_page: Nullable(Type.String()),
});
