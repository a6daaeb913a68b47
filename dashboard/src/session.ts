/**
 * The session JWT lives only in sessionStorage: it dies with the tab, is never written to a
 * cookie (no CSRF surface) and never goes into a URL.
 */
const TOKEN = 'taskhook.token';
const EMAIL = 'taskhook.email';

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
}
