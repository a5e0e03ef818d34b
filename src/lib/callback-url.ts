/** Longest callback URL accepted (the job keeps it, its workspace may keep one as a default). */
export const CALLBACK_URL_MAX_LENGTH = 2048;

/**
 * A webhook address as OpenRouter takes one for `callback_url`: an absolute `https://` URL without
 * credentials, at most 2,048 characters. Its normalized form, or null when it is not one.
 */
export function httpsCallbackUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > CALLBACK_URL_MAX_LENGTH) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username || url.password) return null;
  return url.href;
}
