/**
 * An upstream answer's body as it arrives, fed by an undici `dispatch` handler (see `postStream`):
 * the chunks of each network read, iterated in order, with backpressure on the socket. It stands
 * in for `request()`'s Readable body on the streaming path, where that stream's state machine,
 * events and async iterator cost more than the relay itself (a profile of streamed lane calls:
 * ~15 % of their CPU).
 */

/** Bytes held before the upstream socket is paused (resumed once the reader has taken them). */
const HIGH_WATER_BYTES = 64 * 1024;
/** How long the rest of a released body may take to arrive before its request is aborted. */
const DRAIN_AFTER_RELEASE_MS = 1_000;

type Waiter = {
  resolve: (r: IteratorResult<Buffer>) => void;
  reject: (err: unknown) => void;
};

export class ArrivingBody implements AsyncIterable<Buffer> {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private ended = false;
  private failure: unknown = null;
  private waiter: Waiter | null = null;
  /** Resumes the paused socket (set while paused). */
  private resumeSocket: (() => void) | null = null;
  private released = false;
  private drainTimer: NodeJS.Timeout | null = null;

  /** `abort` cancels the request (the handler's `onError` then reports it). */
  constructor(private readonly abort: (reason: Error) => void) {}

  // --- fed by the dispatch handler -----------------------------------------------------------

  /** A chunk arrived; false asks undici to pause the socket until `resume` is called. */
  push(chunk: Buffer, resume: () => void): boolean {
    if (this.released) return true;
    const w = this.waiter;
    if (w) {
      this.waiter = null;
      w.resolve({ value: chunk, done: false });
      return true;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes < HIGH_WATER_BYTES) return true;
    this.resumeSocket = resume;
    return false;
  }

  end(): void {
    this.ended = true;
    this.settleTimer();
    const w = this.waiter;
    if (w) {
      this.waiter = null;
      w.resolve({ value: undefined, done: true });
    }
  }

  fail(err: unknown): void {
    if (this.ended || this.failure !== null) return;
    this.failure = err;
    this.settleTimer();
    const w = this.waiter;
    if (w) {
      this.waiter = null;
      w.reject(err);
    }
  }

  // --- read by the consumer ------------------------------------------------------------------

  get done(): boolean {
    return this.ended || this.failure !== null;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: () => this.next(),
      return: async () => {
        this.release();
        return { value: undefined, done: true };
      },
    };
  }

  private next(): Promise<IteratorResult<Buffer>> {
    const chunk = this.chunks.shift();
    if (chunk) {
      this.bytes -= chunk.length;
      const resume = this.resumeSocket;
      if (resume && this.bytes < HIGH_WATER_BYTES) {
        this.resumeSocket = null;
        resume();
      }
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The whole (rest of the) body as UTF-8 text (an error body, or a JSON answer to a stream request). */
  async text(): Promise<string> {
    const parts: Buffer[] = [];
    for await (const chunk of this) parts.push(chunk);
    return Buffer.concat(parts).toString('utf8');
  }

  /**
   * The reader is done with the body — usually at the stream's last event, a few bytes before the
   * body's own end. The rest is let through and dropped; a body that has not ended within a second
   * has its request aborted (aborting at once would cost an error object per stream for nothing).
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.chunks.length = 0;
    this.bytes = 0;
    const resume = this.resumeSocket;
    this.resumeSocket = null;
    resume?.();
    if (this.done) return;
    this.drainTimer = setTimeout(() => this.abort(new Error('stream released')), DRAIN_AFTER_RELEASE_MS);
    this.drainTimer.unref();
  }

  private settleTimer(): void {
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
  }
}
