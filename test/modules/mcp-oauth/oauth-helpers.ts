import { createHash, randomBytes } from 'node:crypto';

/** A PKCE pair (RFC 7636, S256). */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A form POST to the server (the token and revocation endpoints). */
export function postForm(
  baseUrl: string,
  path: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

/** GET without following redirects; answers the status and Location. */
export async function getManual(url: string) {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
}

/** The query of a redirect as an object. */
export function queryOf(location: string | null): Record<string, string> {
  return Object.fromEntries(new URL(location ?? 'http://invalid/').searchParams);
}
