import { ApiError, badRequest } from '../lib/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../lib/json-depth.js';
import { BatchBodyParser } from './body-parser.js';
import { parsedEvents, payloadTooLarge } from './ingest.js';

/**
 * Anthropic's batch body `{"requests": [{"custom_id", "params"}, …]}` read as it arrives and
 * rewritten, request by request, into Gatehouse's own batch body for `/v1/messages`
 * (`{"endpoint", "completion_window", "requests": [{"custom_id", "body"}, …]}`), which the usual
 * ingestion then validates, stores and admits. Anthropic's own rules are checked here: custom_id
 * `^[a-zA-Z0-9_-]{1,64}$`, at most 100,000 requests and 256 MB.
 */

export const MAX_MESSAGE_BATCH_REQUESTS = 100_000;
export const MAX_MESSAGE_BATCH_BYTES = 256 * 1024 * 1024;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const HEAD = '{"endpoint":"/v1/messages","completion_window":"24h","requests":[';

function requestError(index: number, customId: string | null, problem: string): ApiError {
  const who = customId === null ? '' : ` (custom_id ${JSON.stringify(customId)})`;
  return badRequest(`requests[${index}]${who}${problem}`, { index, custom_id: customId });
}

/** One Anthropic request → the JSON text of the Gatehouse request item. */
function toItem(index: number, value: unknown): string {
  const item = value as Record<string, unknown>;
  const customId = item.custom_id;
  if (typeof customId !== 'string' || !CUSTOM_ID.test(customId))
    throw requestError(
      index,
      typeof customId === 'string' ? customId.slice(0, 80) : null,
      ': custom_id must be 1 to 64 characters of letters, digits, "_" and "-"',
    );
  for (const k of Object.keys(item))
    if (k !== 'custom_id' && k !== 'params') throw requestError(index, customId, `: unknown field "${k}"`);
  const params = item.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params))
    throw requestError(index, customId, '.params: must be an object (the Messages request)');
  // As on POST /messages; and serializing it below would overflow the stack (a 500).
  if (nestsDeeperThan(params))
    throw requestError(index, customId, `.params: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  return JSON.stringify({ custom_id: customId, body: params });
}

export async function* messageBatchBody(
  body: AsyncIterable<Buffer>,
  maxItemBytes: number,
): AsyncGenerator<Buffer> {
  const parser = new BatchBodyParser({ maxItemBytes });
  const parse = parsedEvents;
  let count = 0;
  let bytes = 0;
  yield Buffer.from(HEAD);
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > MAX_MESSAGE_BATCH_BYTES) throw payloadTooLarge(MAX_MESSAGE_BATCH_BYTES);
    const items: string[] = [];
    for (const e of parse(() => parser.write(chunk))) {
      if (e.kind === 'field')
        throw badRequest(`Unknown field "${e.name}": a message batch takes requests only`);
      if (e.index >= MAX_MESSAGE_BATCH_REQUESTS)
        throw badRequest(`requests: at most ${MAX_MESSAGE_BATCH_REQUESTS} requests per message batch`);
      items.push((count === 0 && items.length === 0 ? '' : ',') + toItem(e.index, e.value));
    }
    count += items.length;
    if (items.length > 0) yield Buffer.from(items.join(''));
  }
  parse(() => {
    parser.end();
    return [];
  });
  if (count === 0) throw badRequest('requests: must contain at least one request');
  yield Buffer.from(']}');
}

/**
 * The ingestion's refusals name a request's `.body`; the caller sent it as `.params`. The
 * custom_id in the message is Anthropic's (no quotes or dots), so the first `.body` after it is the
 * field.
 */
export function inAnthropicTerms(err: unknown): unknown {
  if (!(err instanceof ApiError) || err.metadata?.index === undefined) return err;
  const message = err.message.replace(/^(requests\[\d+\](?: \(custom_id "[\w-]*"\))?)\.body\b/, '$1.params');
  return message === err.message ? err : new ApiError(err.status, message, err.metadata, err.code);
}
