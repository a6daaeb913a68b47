/**
 * The session JWT lives only in sessionStorage: it dies with the tab, is never written to a
 * cookie (no CSRF surface) and never goes into a URL. The workspace chosen in the switcher is
 * kept beside it, per tab.
 */
const TOKEN = 'taskhook.token';
const EMAIL = 'taskhook.email';
const WORKSPACE = 'taskhook.workspace';

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN);
}

export function getEmail(): string | null {
  return sessionStorage.getItem(EMAIL);
}

export function saveSession(token: string, email: string): void {
  sessionStorage.setItem(TOKEN, token);
  sessionStorage.setItem(EMAIL, email);
}

export function clearSession(): void {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(EMAIL);
  sessionStorage.removeItem(WORKSPACE);
}

/** The uuid of the workspace chosen in this tab, sent as X-Taskhook-Workspace; null: the personal one. */
export function chosenWorkspace(): string | null {
  return sessionStorage.getItem(WORKSPACE);
}

export function rememberWorkspace(uuid: string | null): void {
  if (uuid) sessionStorage.setItem(WORKSPACE, uuid);
  else sessionStorage.removeItem(WORKSPACE);
}
