import { TranslationError } from '../formats/chat.js';
import type { Body, CallWire, InferenceCall } from './call.js';

/** What a wire's strict parse makes of a body. */
type Canonical = ReturnType<CallWire['parse']>;

/**
 * The caller's body as the canonical request, parsed on first need and once for the whole call:
 * every model of the list plans its translated attempts from the same parse (or its error).
 */
export interface ParseOnce {
  /** The canonical request, or undefined when the body cannot be translated (see `error`). */
  parsed(): Canonical | undefined;
  /** Why the body cannot be translated, once `parsed` found out; else null. */
  error(): TranslationError | null;
  /** The canonical request if some attempt needed it (not parsing it otherwise). */
  canonical(): Canonical | undefined;
}

export function parseOnce(call: Pick<InferenceCall, 'wire' | 'headers'>, body: Body): ParseOnce {
  let canonical: Canonical | undefined;
  let parseError: TranslationError | null = null;
  return {
    parsed() {
      if (canonical === undefined && parseError === null) {
        try {
          canonical = call.wire.parse(body, call.headers);
        } catch (err) {
          if (!(err instanceof TranslationError)) throw err;
          parseError = err;
        }
      }
      return canonical;
    },
    error: () => parseError,
    canonical: () => canonical,
  };
}
