import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { invalid } from '../../http/errors.js';
import { randomBase62, toBase62 } from '../../lib/crypto.js';
import { isUuid, newRandomUuid } from '../../lib/ids.js';

export const KEY_PREFIX = 'sk_service_';
const RANDOM_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
export const KEY_LENGTH = KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH;
const KEY_RE = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

function checksum(body: string): string {
  return toBase62(crc32(body), CHECKSUM_LENGTH);
}

/** A new platform key: `sk_service_` + 43 random base62 characters + a 6-character CRC32. */
export function generatePlatformKey(): string {
  const body = KEY_PREFIX + randomBase62(RANDOM_LENGTH);
  return body + checksum(body);
}

/** True when the key has the platform-key shape and its checksum matches (no lookup needed). */
export function isWellFormedPlatformKey(key: string): boolean {
  if (!KEY_RE.test(key)) return false;
  const body = key.slice(0, -CHECKSUM_LENGTH);
  return checksum(body) === key.slice(-CHECKSUM_LENGTH);
}

/** The part of a key that may be shown again after creation. */
export function platformKeyPrefix(key: string): string {
  return key.slice(0, 16);
}

/** A new ingest token: a random (v4) UUID. */
export function generateIngestToken(): string {
  return newRandomUuid();
}

export function isWellFormedIngestToken(token: string): boolean {
  return isUuid(token);
}

export function ingestTokenPrefix(token: string): string {
  return token.slice(0, 8);
}

/** E-mail addresses are compared case-insensitively and without surrounding spaces. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The flat 403 of a password or OAuth login to a disabled account. */
export const ACCOUNT_DISABLED = 'This account is disabled';

/** A Standard Webhooks signing secret: `whsec_` + 32 random bytes in standard base64 (what verifiers decode). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 1024;

/** @throws AppError INVALID_REQUEST naming `field` when the password is too short */
export function requirePassword(field: string, password: string) {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw invalid(field, `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
}

/** The credential a request carries, classified by its header and shape (no lookup yet). */
export type PresentedCredential =
  | { kind: 'none' }
  | { kind: 'malformed' }
  | { kind: 'platform_key'; value: string }
  | { kind: 'jwt'; value: string }
  | { kind: 'ingest_token'; value: string }
  | { kind: 'mcp_token'; value: string };

/** The prefix of an MCP OAuth access token (taskhook's authorization server for `/mcp`). */
export const MCP_ACCESS_TOKEN_PREFIX = 'mcp_at_';

type Headers = Record<string, string | string[] | undefined>;

function single(value: string | string[] | undefined): string | undefined | null {
  if (Array.isArray(value)) return null;
  return value;
}

/**
 * Reads the credential from `x-service-api-key`, `x-api-key` or `Authorization`
 * (`Bearer <jwt|platform key>`, or a bare ingest token).
 */
export function readCredential(headers: Headers): PresentedCredential {
  const serviceKey = single(headers['x-service-api-key']);
  const keyHeader = serviceKey === undefined ? single(headers['x-api-key']) : serviceKey;
  if (keyHeader === null) return { kind: 'malformed' };
  if (keyHeader !== undefined) {
    const key = keyHeader.trim();
    return isWellFormedPlatformKey(key) ? { kind: 'platform_key', value: key } : { kind: 'malformed' };
  }
  const auth = single(headers.authorization);
  if (auth === null) return { kind: 'malformed' };
  if (auth === undefined || auth.trim() === '') return { kind: 'none' };
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(auth);
  if (bearer?.[1]) {
    const token = bearer[1];
    // OTLP exporters are often configured with `Bearer <token>`; a UUID is never a JWT.
    if (isWellFormedIngestToken(token)) return { kind: 'ingest_token', value: token.toLowerCase() };
    if (token.startsWith(MCP_ACCESS_TOKEN_PREFIX)) return { kind: 'mcp_token', value: token };
    if (token.startsWith(KEY_PREFIX)) {
      return isWellFormedPlatformKey(token) ? { kind: 'platform_key', value: token } : { kind: 'malformed' };
    }
    return { kind: 'jwt', value: token };
  }
  const raw = auth.trim();
  return isWellFormedIngestToken(raw) ? { kind: 'ingest_token', value: raw.toLowerCase() } : { kind: 'malformed' };
}
