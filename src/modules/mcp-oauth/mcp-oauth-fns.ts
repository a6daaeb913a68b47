import { createHash } from 'node:crypto';
import { randomBase62 } from '../../lib/crypto.js';

/**
 * The pure rules of taskhook's authorization server for `/mcp` (docs/mcp.md, "Connecting with
 * OAuth"): redirect URIs, resource indicators, PKCE, token formats and client metadata.
 */

/** An OAuth error answer: `{error, error_description}` with its HTTP status (RFC 6749 §5.2). */
export class OAuthError extends Error {
  constructor(
    readonly status: 400 | 401 | 404,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

export const SCOPE = 'mcp';
export const TOKEN_PREFIXES = { access: 'mcp_at_', refresh: 'mcp_rt_', code: 'mcp_ac_' } as const;
export type TokenKind = keyof typeof TOKEN_PREFIXES;
const TOKEN_RANDOM = 43;

/** A new code or token: its prefix plus 43 random base62 characters. */
export function newToken(kind: TokenKind): string {
  return TOKEN_PREFIXES[kind] + randomBase62(TOKEN_RANDOM);
}

/** The kind a presented value has by its shape, or null. */
export function tokenKindOf(value: string): TokenKind | null {
  for (const kind of Object.keys(TOKEN_PREFIXES) as TokenKind[]) {
    const prefix = TOKEN_PREFIXES[kind];
    if (
      value.length === prefix.length + TOKEN_RANDOM &&
      value.startsWith(prefix) &&
      /^[0-9A-Za-z]+$/.test(value.slice(prefix.length))
    ) {
      return kind;
    }
  }
  return null;
}

/** BASE64URL(SHA-256(verifier)) equals the challenge (RFC 7636 §4.6). */
export function pkceMatches(verifier: string, challenge: string): boolean {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url') === challenge;
}

export const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/;

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Is this a redirect URI the server accepts: absolute, no fragment, ≤ 2048, https or loopback http. */
export function isValidRedirectUri(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2048 || value.includes('#')) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return url.hostname !== '';
  return url.protocol === 'http:' && LOOPBACK.has(url.hostname);
}

/**
 * Does a request's `redirect_uri` match a registered one: exact string comparison, except that
 * registered `http` URIs on 127.0.0.1 or [::1] match any port (RFC 8252 §7.3).
 */
export function redirectMatches(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let asked: URL;
  try {
    asked = new URL(requested);
  } catch {
    return false;
  }
  if (asked.protocol !== 'http:' || (asked.hostname !== '127.0.0.1' && asked.hostname !== '[::1]')) return false;
  return registered.some((uri) => {
    const known = new URL(uri);
    if (known.protocol !== 'http:' || known.hostname !== asked.hostname) return false;
    known.port = asked.port;
    return known.href === asked.href;
  });
}

/**
 * A resource indicator in comparable form: scheme and host lowercased (the URL parser does that),
 * default port dropped, one trailing `/` removed. Null when it is not an absolute URL.
 */
export function normalizeResource(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.hash) return null;
  const text = url.href;
  return text.endsWith('/') ? text.slice(0, -1) : text;
}

/** Adds `params` to a redirect URI's query (keeping what it has). */
export function withQuery(uri: string, params: Record<string, string | null | undefined>): string {
  const url = new URL(uri);
  for (const [key, value] of Object.entries(params)) if (value != null) url.searchParams.append(key, value);
  return url.href;
}

/** What the server knows of a client, from its registration or its metadata document. */
export interface ClientInfo {
  client_id: string;
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
  registration: 'metadata_document' | 'dynamic';
  redirect_uris: string[];
  grant_types: string[];
  auth_method: 'none' | 'client_secret_basic' | 'client_secret_post';
}

/** Is `client_id` shaped as a Client ID Metadata Document URL (https, a path other than `/`)? */
export function isMetadataDocumentId(clientId: string): boolean {
  if (clientId.length > 2048 || !clientId.startsWith('https://')) return false;
  try {
    const url = new URL(clientId);
    return url.pathname !== '/' && !url.hash && !url.username && !url.password && !clientId.includes('#');
  } catch {
    return false;
  }
}

const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);

/** `grant_types`: absent → the default; else a subset of the two that holds authorization_code. */
export function readGrantTypes(value: unknown): string[] | null {
  if (value === undefined) return ['authorization_code'];
  if (!Array.isArray(value) || !value.every((g) => typeof g === 'string' && GRANT_TYPES.has(g))) return null;
  if (!value.includes('authorization_code')) return null;
  return [...new Set(value as string[])];
}

/** `response_types`: absent or exactly `["code"]`. */
export function responseTypesOk(value: unknown): boolean {
  return value === undefined || (Array.isArray(value) && value.length === 1 && value[0] === 'code');
}

/** A name of 1–200 characters, or undefined when absent; null when present and wrong. */
export function readName(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  return typeof value === 'string' && value.length >= 1 && value.length <= 200 ? value : null;
}

/** An absolute http(s) URL of at most 2048 characters, or undefined when absent; null when wrong. */
export function readWebUrl(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > 2048) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? value : null;
  } catch {
    return null;
  }
}

/** 1–10 valid redirect URIs, or null. */
export function readRedirectUris(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length < 1 || value.length > 10) return null;
  return value.every(isValidRedirectUri) ? (value as string[]) : null;
}

/**
 * A fetched Client ID Metadata Document as a client, or the reason it is invalid
 * (draft-ietf-oauth-client-id-metadata-document: `client_id` must equal the URL; public clients only).
 */
export function clientFromDocument(url: string, doc: unknown): ClientInfo | string {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return 'the document is not a JSON object';
  const d = doc as Record<string, unknown>;
  if (d.client_id !== url) return 'client_id does not equal the document URL';
  const name = readName(d.client_name);
  if (typeof name !== 'string') return 'client_name must be a string of 1 to 200 characters';
  const redirects = readRedirectUris(d.redirect_uris);
  if (!redirects) return 'redirect_uris must be 1 to 10 valid redirect URIs';
  if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== 'none') {
    return 'token_endpoint_auth_method must be none';
  }
  const grants = readGrantTypes(d.grant_types);
  if (!grants) return 'grant_types must hold authorization_code and nothing but refresh_token besides';
  if (!responseTypesOk(d.response_types)) return 'response_types must be ["code"]';
  if ('client_secret' in d || 'client_secret_expires_at' in d) return 'a metadata document client has no secret';
  return {
    client_id: url,
    client_name: name,
    client_uri: readWebUrl(d.client_uri) ?? null,
    logo_uri: readWebUrl(d.logo_uri) ?? null,
    registration: 'metadata_document',
    redirect_uris: redirects,
    grant_types: grants,
    auth_method: 'none',
  };
}
