/**
 * How a provider reads its own error bodies. Each vendor's shape lives beside its adapter
 * (`openai/errors.ts`, `anthropic/errors.ts`, `google/errors.ts`); the shared HTTP code
 * (`http.ts`) only asks the shape it is given, so it knows no vendor's format.
 */
export interface ErrorShape {
  /** The upstream's own message from a parsed error body, or undefined when the body has none. */
  message(body: unknown): string | undefined;
  /** A retry delay the body itself carries (Gemini's RetryInfo), in ms. */
  retryAfterMs?(body: unknown): number | undefined;
  /**
   * Whether another provider of the model may serve the call after this error, when the body says
   * more than the status (Azure's DeploymentNotFound: this resource's setup, not the request);
   * undefined leaves it to the status (408, 429, 5xx).
   */
  retryable?(status: number, body: unknown): boolean | undefined;
}

export type Obj = Record<string, unknown>;
export const obj = (x: unknown): Obj => (x && typeof x === 'object' ? (x as Obj) : {});
export const nonEmpty = (x: unknown): string | undefined => (typeof x === 'string' && x ? x : undefined);
