/**
 * What the routing engine and the provider adapters need of a cancellation: whether and why, and a
 * listener. A DOM AbortSignal has this shape (the batch worker passes one); the HTTP endpoints and
 * each upstream attempt use a CallAbort, a plain object instead of an EventTarget: creating an
 * AbortSignal and adding and removing its listeners was a few percent of a call's CPU. undici takes
 * it as a request's signal too (it only listens for 'abort' and reads `reason`).
 */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A call's cancellation, aborted once (later aborts are ignored); listeners run once. */
export class CallAbort implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] = [];

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const l of listeners) l();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}

/** `p`, or the signal's reason as soon as it aborts (a shared token request outlives one caller). */
export function untilAborted<T>(p: Promise<T>, signal: CallSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
