import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** Hex SHA-256 of a UTF-8 string: how keys and tokens are stored. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time equality of two strings (false when lengths differ, without early exit on content). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    // Compare against itself so the time spent does not depend on where the inputs differ.
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` uniformly random base62 characters (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A non-negative integer in base62 (alphabet 0-9A-Za-z), left-padded with '0' to `width`. */
export function toBase62(value: number, width: number): string {
  let n = value;
  let out = '';
  do {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out.padStart(width, '0');
}

/** URL-safe random secret text of `bytes` random bytes. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Authenticated encryption for secrets kept at rest (webhook and signing secrets, provider keys,
 * agent header values). The 256-bit key is derived with HKDF-SHA256 from TASKHOOK_ENCRYPTION_KEY,
 * so any sufficiently long string works as the configured key.
 *
 * A value sealed now reads `v2.<key id>.<iv | tag | ciphertext>`: the key id (derived from the key,
 * it says nothing about it) picks the key that opens it, so after a rotation the keys listed in
 * TASKHOOK_ENCRYPTION_KEY_PREVIOUS still open older values. `v1.` values, sealed before key ids
 * existed, are tried with every configured key.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  /** @throws SealedSecretError when no configured key opens the value */
  open(sealed: string): string;
  /** Whether `sealed` is already sealed with the current key (what `secret reseal` skips). */
  isCurrent(sealed: string): boolean;
}

/** A stored secret that no configured encryption key opens: a configuration fault, not a bug. */
export class SealedSecretError extends Error {
  constructor() {
    super(
      'A stored secret was sealed with an encryption key that is not configured: add that key to TASKHOOK_ENCRYPTION_KEY_PREVIOUS',
    );
  }
}

interface BoxKey {
  id: string;
  key: Buffer;
}

function boxKey(material: string): BoxKey {
  const key = Buffer.from(hkdfSync('sha256', material, 'taskhook', 'secret-box-v1', 32));
  const id = Buffer.from(hkdfSync('sha256', material, 'taskhook', 'secret-box-key-id', 6)).toString('base64url');
  return { id, key };
}

function openWith(key: Buffer, raw: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

function tryOpen(keys: readonly BoxKey[], raw: Buffer): string {
  for (const { key } of keys) {
    try {
      return openWith(key, raw);
    } catch {}
  }
  throw new SealedSecretError();
}

/** A box that seals with `current` and opens with it or any of `previous`. */
export function createSecretBox(current: string, previous: readonly string[] = []): SecretBox {
  const sealing = boxKey(current);
  const keys = [sealing, ...previous.map(boxKey)];
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', sealing.key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `v2.${sealing.id}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
    },
    open(sealed) {
      if (sealed.startsWith('v1.')) return tryOpen(keys, Buffer.from(sealed.slice(3), 'base64url'));
      const [version, id, body] = sealed.split('.');
      if (version !== 'v2' || body === undefined) throw new SealedSecretError();
      return tryOpen(
        keys.filter((k) => k.id === id),
        Buffer.from(body, 'base64url'),
      );
    },
    isCurrent: (sealed) => sealed.startsWith(`v2.${sealing.id}.`),
  };
}
