import { createHmac } from 'node:crypto';
import { parseStripeSignature, type VerificationType } from './signature-schemes-fns.js';

/**
 * Replay protection of signed deliveries (docs/api.md, "Signature schemes"): an accepted delivery
 * of a signed scheme leaves its signature behind, remembered per trigger for the scheme's replay
 * window; a later delivery carrying the same signature is the same delivery.
 */

/** A verified delivery's signature (the HMAC's bytes as lowercase hex) and when it may be forgotten. */
export interface SignatureMark {
  signature: string;
  expiresAtMs: number;
}

/** GitHub signs no timestamp: its signatures are remembered this long. */
export const GITHUB_REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;

type Headers = Record<string, string | string[] | undefined>;
const read = (headers: Headers, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};
const hexBytes = (text: string) => (/^[0-9a-fA-F]+$/.test(text) ? Buffer.from(text, 'hex') : null);

/** What one scheme signed: the entries the header offers (as bytes) and each secret's digest. */
interface Signed {
  offered: Buffer[];
  digest: (secret: string) => Buffer;
  /** Unix seconds signed with the body, or null (github). */
  timestamp: number | null;
}

function signedParts(type: Exclude<VerificationType, 'secret'>, headers: Headers, body: Buffer): Signed | null {
  const hmac = (key: string | Buffer, prefix: string) => createHmac('sha256', key).update(prefix).update(body).digest();
  switch (type) {
    case 'github': {
      const match = /^sha256=([0-9a-fA-F]{64})$/.exec((read(headers, 'x-hub-signature-256') ?? '').trim());
      return match?.[1]
        ? { offered: [Buffer.from(match[1], 'hex')], digest: (s) => hmac(s, ''), timestamp: null }
        : null;
    }
    case 'standard_webhooks': {
      const id = read(headers, 'webhook-id') ?? '';
      const ts = read(headers, 'webhook-timestamp') ?? '';
      const offered = (read(headers, 'webhook-signature') ?? '')
        .split(' ')
        .filter((entry) => entry.startsWith('v1,'))
        .map((entry) => Buffer.from(entry.slice(3), 'base64'));
      const key = (s: string) => Buffer.from(s.slice('whsec_'.length), 'base64');
      return { offered, digest: (s) => hmac(key(s), `${id}.${ts}.`), timestamp: Number(ts) };
    }
    case 'stripe': {
      const parsed = parseStripeSignature(read(headers, 'stripe-signature') ?? '');
      if (!parsed) return null;
      const offered = parsed.v1.flatMap((v) => hexBytes(v) ?? []);
      return { offered, digest: (s) => hmac(s, `${parsed.t}.`), timestamp: Number(parsed.t) };
    }
    case 'slack': {
      const ts = read(headers, 'x-slack-request-timestamp') ?? '';
      const signature = read(headers, 'x-slack-signature') ?? '';
      const bytes = signature.startsWith('v0=') ? hexBytes(signature.slice(3)) : null;
      return { offered: bytes ? [bytes] : [], digest: (s) => hmac(s, `v0:${ts}:`), timestamp: Number(ts) };
    }
  }
}

/**
 * The signature that verified an accepted delivery (the digest of one of `secrets` that the
 * header offers, however the header spells it), and the end of its replay window: 24 h from
 * `nowMs` for github, else the signed timestamp plus `toleranceSeconds` (after that the timestamp
 * check refuses a replay anyway). Null when no offered entry matches (not a verified delivery).
 */
export function signatureMark(
  type: Exclude<VerificationType, 'secret'>,
  headers: Headers,
  body: Buffer,
  keys: { secrets: readonly string[]; nowMs: number; toleranceSeconds: number },
): SignatureMark | null {
  const parts = signedParts(type, headers, body);
  if (!parts || parts.offered.length === 0) return null;
  for (const secret of keys.secrets) {
    const digest = parts.digest(secret);
    if (!parts.offered.some((entry) => entry.equals(digest))) continue;
    const expiresAtMs =
      parts.timestamp === null || !Number.isFinite(parts.timestamp)
        ? keys.nowMs + GITHUB_REPLAY_WINDOW_MS
        : (parts.timestamp + keys.toleranceSeconds) * 1000;
    return { signature: digest.toString('hex'), expiresAtMs };
  }
  return null;
}
