/**
 * Images, documents and audio in tool results, for wires whose tool result carries text only
 * (OpenAI Chat Completions' `tool` messages; Gemini's `functionResponse`). The tool result keeps
 * its text — a note when it had none, so the call is still answered — and its media follow in the
 * user turn after the run of tool results, each result's introduced by a line naming its call.
 */
import type { ContentPart } from '../formats/chat.js';

export type TextPart = Extract<ContentPart, { type: 'text' }>;

/** A tool result's parts: its text parts, and everything else (the media to move). */
export function splitToolResult(parts: readonly ContentPart[]): { text: TextPart[]; media: ContentPart[] } {
  const text: TextPart[] = [];
  const media: ContentPart[] = [];
  for (const p of parts) {
    if (p.type === 'text') text.push(p);
    else media.push(p);
  }
  return { text, media };
}

const NOUNS: Record<Exclude<ContentPart['type'], 'text'>, [string, string]> = {
  image_url: ['image', 'images'],
  file: ['document', 'documents'],
  input_audio: ['audio clip', 'audio clips'],
  video_url: ['video', 'videos'],
};

/** The stand-in text of a tool result that held media only: `(image attached below)`, … */
export function attachedNote(media: readonly ContentPart[]): string {
  const kinds = new Set(media.map((p) => p.type));
  const [kind] = kinds;
  if (kinds.size !== 1 || kind === undefined || kind === 'text') return '(attachments below)';
  const [one, many] = NOUNS[kind];
  return media.length === 1 ? `(${one} attached below)` : `(${many} attached below)`;
}

/** The line before a tool result's media in the user turn (the model matches them by it). */
export function attachmentIntro(toolCallId: string | undefined, name: string | undefined): string {
  const call = [toolCallId, name && `(${name})`].filter(Boolean).join(' ');
  return call ? `Attached to the result of tool call ${call}:` : 'Attached to the tool result:';
}
