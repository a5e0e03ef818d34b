/**
 * The size cap of content in export records: a field (the input, the output) whose JSON is larger
 * than the cap becomes a string — the start of that JSON, cut on a character boundary, and a marker
 * saying how large it was — so one long conversation cannot make a batch too large for its
 * receiver (OTLP collectors and Langfuse refuse oversized requests and attribute values).
 */
import type { ExportContent } from './records.js';

/** The default cap per field, bytes of UTF-8 (GATEHOUSE_EXPORT_CONTENT_MAX_BYTES). */
export const CONTENT_MAX_BYTES = 64 * 1024;

const marker = (bytes: number) => `…[truncated by Gatehouse: ${bytes} bytes]`;

/** The UTF-8 text in `buf` cut to at most `max` bytes of UTF-8, never inside a character. */
function cutUtf8(buf: Buffer, max: number): string {
  let end = Math.max(0, Math.min(max, buf.length));
  // Back up over continuation bytes (10xxxxxx) to the start of the character `end` would split.
  while (end > 0 && end < buf.length && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** The field as is when its JSON fits in `maxBytes`, else the truncated string (at most `maxBytes`). */
function capField(value: unknown, maxBytes: number): { value: unknown; truncated: boolean } {
  const json = Buffer.from(JSON.stringify(value) ?? 'null', 'utf8');
  if (json.length <= maxBytes) return { value, truncated: false };
  const tail = marker(json.length);
  const room = maxBytes - Buffer.byteLength(tail, 'utf8');
  return { value: `${cutUtf8(json, room)}${tail}`, truncated: true };
}

/** The content with each field capped at `maxBytes` (0: no cap); `truncated` names the cut fields. */
export function capContent(content: ExportContent, maxBytes: number): ExportContent {
  if (maxBytes <= 0) return content;
  const input = capField(content.input, maxBytes);
  const output = capField(content.output, maxBytes);
  if (!input.truncated && !output.truncated) return content;
  const truncated = [
    ...(input.truncated ? ['input' as const] : []),
    ...(output.truncated ? ['output' as const] : []),
  ];
  return { input: input.value, output: output.value, truncated };
}
