import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Batcher, type IpcMessage, unbatch } from './ipc.js';
import { SharedState } from './shared-state.js';

const call = (id: number, op: string, args: unknown[]): IpcMessage => ({ gh: 'call', id, op, args });

describe('IPC batching of serve --workers (one message per loop turn)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('writes the messages of one turn as one batch, in order, and a lone message as is', () => {
    const written: IpcMessage[] = [];
    const out = new Batcher((m) => {
      written.push(m);
      return null;
    });
    out.push(call(1, 'a', []));
    out.push({ gh: 'bus', text: 'x' });
    out.push(call(2, 'b', []));
    expect(written).toEqual([]);
    vi.runAllTimers();
    expect(written).toEqual([
      { gh: 'batch', messages: [call(1, 'a', []), { gh: 'bus', text: 'x' }, call(2, 'b', [])] },
    ]);
    out.push(call(3, 'c', []));
    vi.runAllTimers();
    expect(written[1]).toEqual(call(3, 'c', []));
  });

  it('flush() writes at once; a failed write fails every message of the batch', async () => {
    const written: IpcMessage[] = [];
    const out = new Batcher(async (m) => {
      written.push(m);
      return new Error('channel closed');
    });
    const failed: string[] = [];
    out.push(call(1, 'a', []), (e) => failed.push(`1 ${e.message}`));
    out.push(call(2, 'b', []), (e) => failed.push(`2 ${e.message}`));
    out.flush();
    expect(written).toHaveLength(1);
    await vi.runAllTimersAsync();
    expect(failed).toEqual(['1 channel closed', '2 channel closed']);
    expect(written).toHaveLength(1);
  });

  it('unbatch delivers each message of a batch in order and ignores what is malformed', () => {
    const seen: IpcMessage[] = [];
    unbatch(
      { gh: 'batch', messages: [call(1, 'a', []), 'junk', { gh: 'batch', messages: [] }, { gh: 'ready' }] },
      (m) => seen.push(m),
    );
    unbatch({ gh: 'batch', messages: 'no' }, (m) => seen.push(m));
    unbatch(null, (m) => seen.push(m));
    unbatch({ gh: 'ready' }, (m) => seen.push(m));
    expect(seen).toEqual([call(1, 'a', []), { gh: 'ready' }, { gh: 'ready' }]);
  });

  it('two workers sending their rate-limit calls in batches: together they admit exactly the limit', async () => {
    const state = new SharedState();
    const verdicts: boolean[] = [];
    // The primary's side: every message of a batch answered in order.
    const primary = (worker: number) => (m: IpcMessage) =>
      unbatch(m, (one) => {
        if (one.gh !== 'call') return;
        void state.handle(worker, one.op, one.args).then((v) => verdicts.push((v as { ok: boolean }).ok));
        return;
      });
    const w1 = new Batcher((m) => {
      primary(1)(m);
      return null;
    });
    const w2 = new Batcher((m) => {
      primary(2)(m);
      return null;
    });
    for (let i = 0; i < 10; i++) (i % 2 ? w1 : w2).push(call(i, 'rl.consume', ['rl', 7, 60, 'key-a']));
    vi.runAllTimers();
    await vi.runAllTimersAsync();
    expect(verdicts.filter(Boolean)).toHaveLength(7);
    expect(verdicts).toHaveLength(10);
  });
});
