/**
 * The AWS event-stream framing of ConverseStream and InvokeModelWithResponseStream
 * (`application/vnd.amazon.eventstream`): binary messages, each prefixed by its total length,
 * decoded (headers, CRCs checked) by the SDK's `EventStreamCodec`. Here only the cutting of the
 * byte stream into whole messages, which the codec leaves to its caller.
 */
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { UpstreamError } from '../types.js';

export const EVENT_STREAM_TYPE = 'application/vnd.amazon.eventstream';

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** One decoded message: its `:message-type`, `:event-type` / `:exception-type`, and JSON body. */
export interface StreamMessage {
  messageType: string;
  /** The event's type, or the exception's. */
  type: string | undefined;
  body: unknown;
}

const headerText = (h: { type: string; value: unknown } | undefined): string | undefined =>
  h && h.type === 'string' ? String(h.value) : undefined;

/** Whole messages out of the chunks of a body; a body ending mid-message → UpstreamError. */
export async function* eventStreamMessages(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<StreamMessage> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of chunks) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : Buffer.from(chunk);
    while (buf.length >= 4) {
      const total = buf.readUInt32BE(0);
      if (total < 16) throw new UpstreamError(502, 'upstream sent a malformed event-stream message');
      if (buf.length < total) break;
      yield decode(buf.subarray(0, total));
      buf = buf.subarray(total);
    }
  }
  if (buf.length) throw new UpstreamError(502, 'upstream stream ended mid-message', { retryable: true });
}

function decode(bytes: Uint8Array): StreamMessage {
  let message: ReturnType<typeof codec.decode>;
  try {
    message = codec.decode(bytes);
  } catch (err) {
    throw new UpstreamError(502, `upstream sent a corrupt event-stream message: ${(err as Error).message}`);
  }
  const text = toUtf8(message.body);
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {}
  const messageType = headerText(message.headers[':message-type']) ?? 'event';
  const type =
    messageType === 'exception'
      ? headerText(message.headers[':exception-type'])
      : messageType === 'error'
        ? headerText(message.headers[':error-code'])
        : headerText(message.headers[':event-type']);
  return { messageType, type, body };
}

/** Encodes one message (the mock server's side, and tests). */
export function encodeEventStreamMessage(
  messageType: 'event' | 'exception',
  type: string,
  body: unknown,
): Uint8Array {
  const typeHeader = messageType === 'event' ? ':event-type' : ':exception-type';
  return codec.encode({
    headers: {
      ':message-type': { type: 'string', value: messageType },
      [typeHeader]: { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(JSON.stringify(body)),
  });
}
