/** Pure rules of provider credentials: the key hint and the shape of a base URL. */

export const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const MAX_BASE_URL_CHARS = 2048;

/**
 * What may be shown of a provider key: for keys of 16 or more characters the first 3 and the
 * last 4 around an ellipsis (`sk-…wxyz`); shorter keys show nothing but the ellipsis, since
 * seven characters of a short key would give too much of it away.
 */
export function apiKeyHint(key: string): string {
  const chars = Array.from(key);
  if (chars.length < 16) return '…';
  return `${chars.slice(0, 3).join('')}…${chars.slice(-4).join('')}`;
}

/**
 * Checks the form of a base URL (absolute http(s), no user-info, query or fragment, at most
 * 2,048 characters) and returns it without trailing slashes. Whether its host is public is the
 * outbound guard's question, asked separately.
 * @returns the normalised URL, or the reason it is refused.
 */
export function normaliseBaseUrl(raw: string): { ok: true; url: string } | { ok: false; reason: string } {
  if (raw.length > MAX_BASE_URL_CHARS) return { ok: false, reason: `must be at most ${MAX_BASE_URL_CHARS} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'must be an absolute http(s) URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'must use http or https' };
  if (url.username || url.password) return { ok: false, reason: 'must not contain credentials' };
  // `new URL` drops an empty "?" or "#", so look at the text as well.
  if (url.search || url.hash || /[?#]/.test(raw)) return { ok: false, reason: 'must not have a query or fragment' };
  return { ok: true, url: raw.replace(/\/+$/, '') };
}
