import { expect } from 'vitest';
import { MediaError } from '../../src/media/types.js';

/** What `fn` throws as a MediaError (its status, code and field); fails when it throws nothing else. */
export function mediaFailure(fn: () => unknown): { status: number; code: string; field?: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MediaError);
    const e = err as MediaError;
    return { status: e.status, code: e.code, field: e.field };
  }
  throw new Error('expected a MediaError');
}
