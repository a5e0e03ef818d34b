import { notFound } from '../lib/errors.js';
import { sameSource } from '../lib/raw-json.js';

/**
 * A call that names an uploaded file by id gets the file's content in its place, before anything
 * reads the body — whichever provider then serves it, translated or passed through, sees the file
 * itself, as a fallback to another provider does:
 *
 * | wire                  | part naming a file                                   | becomes                                   |
 * | chat                  | `{type:"file", file:{file_id}}`                      | `file_data` (a data: URL); an image: `image_url` |
 * | responses             | `{type:"input_file", file_id}`, `{type:"input_image", file_id}` | `file_data` / `image_url` data: URLs |
 * | messages (Anthropic)  | `document`/`image` blocks with `source: {type:"file", file_id}` | a `base64` source (plain text: a `text` one) |
 *
 * Only Gatehouse's own ids (`file-` and 24 hex digits) are looked up, in the caller's workspace (an
 * unknown one is a 404); any other id is a provider's own and passes as it is. Parts are replaced by
 * new objects, never changed in place (the body's bytes are copied where it is unchanged).
 */

export type FileWire = 'chat' | 'responses' | 'messages';

/** A file's content, as a call receives it. */
export interface InlineFile {
  id: string;
  filename: string;
  mimeType: string;
  base64: string;
}

/** Gatehouse's file ids (batches/openai-files-store.ts `newFileId`). */
const OWN_ID = /^file-[0-9a-f]{24}$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const ownId = (v: unknown): v is string => typeof v === 'string' && OWN_ID.test(v);
const isImage = (mime: string) => mime.startsWith('image/');
const dataUrl = (f: InlineFile) => `data:${f.mimeType};base64,${f.base64}`;

/** The own file id a part names, if any. */
function idOf(wire: FileWire, part: Obj): string | undefined {
  switch (wire) {
    case 'chat':
      return part.type === 'file' && isObj(part.file) && ownId(part.file.file_id)
        ? part.file.file_id
        : undefined;
    case 'responses':
      return (part.type === 'input_file' || part.type === 'input_image') && ownId(part.file_id)
        ? part.file_id
        : undefined;
    case 'messages':
      return (part.type === 'document' || part.type === 'image') &&
        isObj(part.source) &&
        part.source.type === 'file' &&
        ownId(part.source.file_id)
        ? part.source.file_id
        : undefined;
  }
}

/** The part with the file's content in place of its id. */
function inlined(wire: FileWire, part: Obj, f: InlineFile): Obj {
  switch (wire) {
    case 'chat': {
      if (isImage(f.mimeType)) return { type: 'image_url', image_url: { url: dataUrl(f) } };
      const file = part.file as Obj;
      const { file_id: _, ...rest } = file;
      return { ...part, file: { ...rest, filename: file.filename ?? f.filename, file_data: dataUrl(f) } };
    }
    case 'responses': {
      const { file_id: _, ...rest } = part;
      if (part.type === 'input_image' || isImage(f.mimeType))
        return {
          type: 'input_image',
          image_url: dataUrl(f),
          detail: typeof part.detail === 'string' ? part.detail : 'auto',
        };
      return { ...rest, filename: part.filename ?? f.filename, file_data: dataUrl(f) };
    }
    case 'messages': {
      const source = f.mimeType.startsWith('text/')
        ? { type: 'text', media_type: 'text/plain', data: Buffer.from(f.base64, 'base64').toString('utf8') }
        : { type: 'base64', media_type: f.mimeType, data: f.base64 };
      return { ...part, source };
    }
  }
}

/** Where a wire's content parts are: each message's (or input item's) content, and tool results' (messages). */
function* partLists(wire: FileWire, body: Obj): Generator<unknown[]> {
  const items = wire === 'responses' ? body.input : body.messages;
  if (!Array.isArray(items)) return;
  for (const item of items) {
    if (!isObj(item) || !Array.isArray(item.content)) continue;
    yield item.content;
    if (wire === 'messages')
      for (const block of item.content)
        if (isObj(block) && block.type === 'tool_result' && Array.isArray(block.content)) yield block.content;
  }
}

/** The ids of Gatehouse's files a body names (none for a body that is no object). */
export function ownFileIds(wire: FileWire, body: unknown): Set<string> {
  const ids = new Set<string>();
  if (!isObj(body)) return ids;
  for (const parts of partLists(wire, body))
    for (const part of parts) {
      const id = isObj(part) ? idOf(wire, part) : undefined;
      if (id) ids.add(id);
    }
  return ids;
}

/**
 * `body` with every own file it names inlined; the same body when it names none (the common case,
 * read without a lookup). `load` reads a file of the caller's workspace (null: it has none).
 */
export async function inlineFiles(
  wire: FileWire,
  body: unknown,
  load: (id: string) => Promise<InlineFile | null>,
): Promise<unknown> {
  const ids = ownFileIds(wire, body);
  if (ids.size === 0 || !isObj(body)) return body;
  const loaded = new Map<string, InlineFile>();
  await Promise.all(
    [...ids].map(async (id) => {
      const file = await load(id);
      if (!file) throw notFound(`File ${id}`);
      loaded.set(id, file);
    }),
  );
  const mapParts = (parts: unknown[]): unknown[] =>
    parts.map((part) => {
      if (!isObj(part)) return part;
      const id = idOf(wire, part);
      if (id) return inlined(wire, part, loaded.get(id) as InlineFile);
      if (wire === 'messages' && part.type === 'tool_result' && Array.isArray(part.content))
        return { ...part, content: mapParts(part.content) };
      return part;
    });
  const key = wire === 'responses' ? 'input' : 'messages';
  const items = (body[key] as unknown[]).map((item) =>
    isObj(item) && Array.isArray(item.content) ? { ...item, content: mapParts(item.content) } : item,
  );
  return sameSource({ ...body, [key]: items }, body);
}
