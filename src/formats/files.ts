/**
 * Documents at the edge: each caller format's way of giving the model a file (Chat Completions'
 * `file` part, Responses' `input_file`, Anthropic's `document` block) read into the canonical
 * `file` part. What a provider does with it (a PDF, a text file, a URL, a file id) is its wire's
 * business (providers/*\/wire.ts).
 */
import type { ContentPart, FileInput } from './chat.js';
import { fail, given, isObj, nonEmptyStr, type Obj, optStr } from './validate.js';

const DATA_URL = /^data:[^;,]+(?:;[^;,]*)*;base64,/;
const HTTP_URL = /^https?:\/\//i;

/** A `file_data` value: a base64 `data:` URL or an http(s) URL. */
export function fileData(v: unknown, path: string): string {
  const data = nonEmptyStr(v, path);
  if (!DATA_URL.test(data) && !HTTP_URL.test(data))
    fail(path, 'must be a data: URL (data:application/pdf;base64,…) or an http(s) URL');
  return data;
}

/**
 * The file part of `{filename?, file_data?, file_id?}` at `path` (Chat Completions' `file` object);
 * `dataPath` names where `file_data` came from when the caller's format calls it otherwise.
 */
export function filePart(
  fields: { filename?: unknown; file_data?: unknown; file_id?: unknown },
  path: string,
  dataPath = `${path}.file_data`,
): ContentPart {
  const file: FileInput = {};
  const filename = optStr(fields.filename, `${path}.filename`);
  if (filename) file.filename = filename;
  if (given(fields.file_data)) file.file_data = fileData(fields.file_data, dataPath);
  else if (given(fields.file_id)) file.file_id = nonEmptyStr(fields.file_id, `${path}.file_id`);
  else fail(path, 'needs file_data (a data: URL or an http(s) URL) or file_id');
  return { type: 'file', file };
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/**
 * Anthropic's `document` block: a PDF (base64 or URL), a plain-text document, or custom content
 * (its text blocks). `title` is the file name; `context` goes before the document as text.
 */
export function documentParts(block: Obj, path: string): ContentPart[] {
  const source = block.source as Obj | undefined;
  if (!source || typeof source !== 'object') return fail(`${path}.source`, 'must be an object');
  // Citations change the answer (cited passages as blocks of their own): only Anthropic makes them.
  if (isObj(block.citations) && block.citations.enabled === true)
    fail(`${path}.citations`, 'citations are only available from an Anthropic provider (pass-through)');
  const title = optStr(block.title, `${path}.title`);
  const context = optStr(block.context, `${path}.context`);
  const lead: ContentPart[] = context ? [{ type: 'text', text: context }] : [];
  const file = (file_data: string): ContentPart[] => [
    ...lead,
    { type: 'file', file: { ...(title ? { filename: title } : {}), file_data } },
  ];
  switch (source.type) {
    case 'base64': {
      const mediaType = nonEmptyStr(source.media_type, `${path}.source.media_type`);
      return file(`data:${mediaType};base64,${nonEmptyStr(source.data, `${path}.source.data`)}`);
    }
    case 'text': {
      const mediaType = optStr(source.media_type, `${path}.source.media_type`) ?? 'text/plain';
      const text =
        typeof source.data === 'string' ? source.data : fail(`${path}.source.data`, 'must be a string');
      return file(`data:${mediaType};base64,${b64(text)}`);
    }
    case 'url':
      return file(fileData(source.url, `${path}.source.url`));
    case 'content': {
      const content = source.content;
      if (typeof content === 'string') return [...lead, { type: 'text', text: content }];
      if (!Array.isArray(content)) return fail(`${path}.source.content`, 'must be a string or an array');
      return [
        ...lead,
        ...content.map((b, i): ContentPart => {
          const inner = b as Obj;
          if (inner?.type === 'text')
            return { type: 'text', text: nonEmptyStr(inner.text, `${path}.source.content[${i}].text`) };
          return fail(
            `${path}.source.content[${i}].type`,
            "only 'text' blocks are carried to another provider",
          );
        }),
      ];
    }
    case 'file':
      return fail(
        `${path}.source.type`,
        "'file' sources (Files API ids) belong to Anthropic: send the document's data",
      );
    default:
      return fail(`${path}.source.type`, "must be 'base64', 'text', 'url' or 'content'");
  }
}
