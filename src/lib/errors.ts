/**
 * Domain errors. Services throw these; the server turns them into the standard envelope
 * `{error:{code,message}}`. Kept free of Fastify so services never import the web layer.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly metadata?: Record<string, unknown>,
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
