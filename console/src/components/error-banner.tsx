import { ApiError } from '../api/client';

/** The message of anything a query or mutation threw. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * Shows an API failure in words and leaves the page usable. Renders nothing without an error, so a
 * page can always place `<ErrorBanner error={query.error ?? mutation.error} />`.
 */
export function ErrorBanner({ error, onDismiss }: { error: unknown; onDismiss?: () => void }) {
  if (error === null || error === undefined) return null;
  return (
    <div className="banner banner-error" role="alert">
      <span>{errorMessage(error)}</span>
      {onDismiss && (
        <button type="button" className="link" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </div>
  );
}
