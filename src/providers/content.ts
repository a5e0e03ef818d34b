import { type ChatMessage, TranslationError } from '../formats/chat.js';

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
