import { type ChatMessage, type FileInput, TranslationError } from '../formats/chat.js';

/** The text of a message's content: a string, or its text parts joined (images ignored). */
export function textOf(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
    .map((p) => p.text)
    .join('');
}

/** `data:<media type>;base64,<data>` → its parts; null for anything else. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = /^data:([^;,]+)((?:;[^;,]*)*?);base64,(.*)$/s.exec(url);
  if (!m) return null;
  return { mediaType: m[1] as string, data: m[3] as string };
}

export const isHttpUrl = (url: string): boolean => /^https?:\/\//i.test(url);

/** Where a file part's document is: inline (base64), at a URL, or in one provider's file store. */
export type FileSource =
  | { kind: 'data'; mediaType: string; data: string }
  | { kind: 'url'; url: string }
  | { kind: 'id'; id: string };

export function fileSource(file: FileInput): FileSource {
  if (file.file_data !== undefined) {
    const inline = parseDataUrl(file.file_data);
    if (inline) return { kind: 'data', ...inline };
    if (isHttpUrl(file.file_data)) return { kind: 'url', url: file.file_data };
    throw new TranslationError('file.file_data must be a data: URL or an http(s) URL');
  }
  if (file.file_id !== undefined) return { kind: 'id', id: file.file_id };
  throw new TranslationError('a file part needs file_data or file_id');
}

/** Text documents (`text/plain`, `text/markdown`, …) travel as text where a wire has no text file. */
export const isTextMedia = (mediaType: string): boolean => /^text\//i.test(mediaType);

export const base64Text = (data: string): string => Buffer.from(data, 'base64').toString('utf8');

/** Parses a tool call's `arguments` JSON; an empty string is `{}`. Throws SyntaxError when invalid. */
export function parseToolArguments(args: string): unknown {
  return args.trim() === '' ? {} : JSON.parse(args);
}

/**
 * The text of a system or developer message, for wire formats that carry the system prompt apart
 * from the turns (Anthropic `system`, Gemini `systemInstruction`). Images there are refused.
 */
export function systemText(m: ChatMessage): string {
  if (Array.isArray(m.content) && m.content.some((p) => p.type !== 'text')) {
    throw new TranslationError('system messages can only contain text');
  }
  return textOf(m.content);
}

/** A tool call's arguments as the JSON object Anthropic (`input`) and Gemini (`args`) require. */
export function toolArgumentsObject(tc: {
  id: string;
  function: { arguments: string };
}): Record<string, unknown> {
  let args: unknown;
  try {
    args = parseToolArguments(tc.function.arguments);
  } catch {
    throw new TranslationError(`tool call ${tc.id}: arguments are not valid JSON`);
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) {
    throw new TranslationError(`tool call ${tc.id}: arguments must be a JSON object`);
  }
  return args as Record<string, unknown>;
}
