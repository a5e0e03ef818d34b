import { createParser, type EventSourceParser } from 'eventsource-parser';
import { isObj, type Obj } from '../formats/validate.js';

/**
 * The final Message of an Anthropic Messages stream, built from its SSE frames as Anthropic's
 * clients build it: blocks opened by `content_block_start`, grown by their deltas (text, thinking,
 * signatures, citations, a tool's input JSON), the stop reason and usage from `message_delta`.
 * `message()` is null until `message_stop` arrived: a stream cut short holds no reply.
 */
export class MessageAccumulator {
  private readonly parser: EventSourceParser;
  private readonly decoder = new TextDecoder();
  private current: (Obj & { content: Obj[] }) | null = null;
  /** Tool input JSON per block index, as its deltas arrive. */
  private readonly inputs = new Map<number, string>();
  private stopped = false;

  constructor() {
    this.parser = createParser({
      onEvent: (e) => {
        try {
          this.add(JSON.parse(e.data));
        } catch {
          // A frame that is not JSON (a keep-alive, a ping's empty data) adds nothing.
        }
      },
    });
  }

  /** Feeds one frame (or any piece) of the stream's text. */
  feed(frame: string | Uint8Array): void {
    this.parser.feed(typeof frame === 'string' ? frame : this.decoder.decode(frame, { stream: true }));
  }

  /** The whole message once the stream reached `message_stop`, else null. */
  message(): Obj | null {
    return this.stopped ? this.current : null;
  }

  private add(event: unknown): void {
    if (!isObj(event)) return;
    const index = typeof event.index === 'number' ? event.index : -1;
    const block = this.current?.content[index];
    switch (event.type) {
      case 'message_start':
        if (isObj(event.message)) this.current = { ...event.message, content: [] };
        return;
      case 'content_block_start':
        if (this.current && isObj(event.content_block) && index >= 0)
          this.current.content[index] = structuredClone(event.content_block);
        return;
      case 'content_block_delta':
        if (block && isObj(event.delta)) this.delta(block, index, event.delta);
        return;
      case 'content_block_stop': {
        const json = this.inputs.get(index);
        if (block && json !== undefined) {
          this.inputs.delete(index);
          try {
            block.input = json === '' ? {} : JSON.parse(json);
          } catch {
            block.input = {};
          }
        }
        return;
      }
      case 'message_delta':
        if (!this.current) return;
        if (isObj(event.delta)) Object.assign(this.current, event.delta);
        if (isObj(event.usage)) this.current.usage = { ...(this.current.usage as Obj), ...event.usage };
        return;
      case 'message_stop':
        this.stopped = this.current !== null;
        return;
    }
  }

  private delta(block: Obj, index: number, d: Obj): void {
    switch (d.type) {
      case 'text_delta':
        block.text = `${block.text ?? ''}${d.text ?? ''}`;
        return;
      case 'thinking_delta':
        block.thinking = `${block.thinking ?? ''}${d.thinking ?? ''}`;
        return;
      case 'signature_delta':
        block.signature = d.signature;
        return;
      case 'citations_delta':
        block.citations = [...(Array.isArray(block.citations) ? block.citations : []), d.citation];
        return;
      case 'input_json_delta':
        this.inputs.set(index, `${this.inputs.get(index) ?? ''}${d.partial_json ?? ''}`);
        return;
    }
  }
}
