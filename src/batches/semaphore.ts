/** Counts free slots; `acquire` waits (FIFO) for one and resolves to the function that frees it. */
export class Semaphore {
  private readonly waiting: (() => void)[] = [];

  constructor(private free: number) {}

  acquire(): Promise<() => void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => this.waiting.push(() => resolve(this.releaser())));
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
