/**
 * Domain errors. Services throw these; the server turns them into the standard envelope
 * `{error:{code,message}}`. Kept free of Fastify so services never import the web layer.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly metadata?: Record<string, unknown>,
    /** A named code (interns API: `name_taken`, …) sent as `error.code` instead of the status. */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, metadata?: Record<string, unknown>) =>
  new ApiError(400, message, metadata);
export const unauthorized = (message = 'Missing or invalid authentication credentials') =>
  new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (what = 'Resource') => new ApiError(404, `${what} not found`);
export const conflict = (message: string) => new ApiError(409, message);

/** An error whose `error.code` is a string, as the interns API answers (`{error:{code:'name_taken',…}}`). */
export const codedError = (
  status: number,
  code: string,
  message: string,
  metadata?: Record<string, unknown>,
) => new ApiError(status, message, metadata, code);
