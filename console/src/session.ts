/**
 * Who is signed in. The key lives in memory and in this tab's sessionStorage only (gone when the
 * tab closes; never localStorage, which outlives the tab and is shared by every tab of the origin).
 */
import { useSyncExternalStore } from 'react';

export type Role = 'management' | 'operator';

export interface Session {
  /** The management key or the operator token, sent as the bearer. */
  token: string;
  role: Role;
  /** What the header shows: the key's masked label, or "operator". */
  label: string;
  /**
   * An API key for the pages that call models, batches, interns and the vault (a management key
   * may not): pasted by the user or created by the console for this session. Kept like the token.
   */
  apiKey?: { key: string; label: string };
  /** `oidc`: the key was made by a sign-in with the identity provider, and sign-out deletes it. */
  via?: 'oidc';
}

const STORAGE_KEY = 'gatehouse.console.session';
const listeners = new Set<() => void>();
let current: Session | null = read();
/** Why the last session ended without the user signing out (shown on the sign-in page). */
let endedBecause: string | null = null;

function read(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    const s = raw ? (JSON.parse(raw) as Session) : null;
    return s && typeof s.token === 'string' && (s.role === 'management' || s.role === 'operator') ? s : null;
  } catch {
    return null;
  }
}

function emit() {
  for (const l of listeners) l();
}

export function getSession(): Session | null {
  return current;
}

export function signIn(session: Session) {
  current = session;
  endedBecause = null;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  emit();
}

/** Sets (or, with null, forgets) the session's API key. */
export function setApiKey(apiKey: Session['apiKey'] | null) {
  if (!current) return;
  const { apiKey: _old, ...rest } = current;
  current = apiKey ? { ...rest, apiKey } : rest;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(current));
  emit();
}

/** Forgets the key everywhere it was kept; `reason` is shown on the sign-in page. */
export function signOut(reason: string | null = null) {
  current = null;
  endedBecause = reason;
  sessionStorage.removeItem(STORAGE_KEY);
  emit();
}

/**
 * A sign-in with the identity provider ends with the gateway sending the browser to
 * /console/#oidc_key=…&email=…&role=…: the key is taken from the fragment (which no server ever
 * receives) and removed from the address bar and the history entry at once.
 */
export function takeProviderSignIn(): void {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const key = params.get('oidc_key');
  if (!key) return;
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
  signIn({
    token: key,
    role: 'management',
    label: `${params.get('email') ?? 'signed in'} (${params.get('role') ?? 'member'})`,
    via: 'oidc',
  });
}

export function signOutReason(): string | null {
  return endedBecause;
}

export function useSession(): Session | null {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => current,
  );
}
