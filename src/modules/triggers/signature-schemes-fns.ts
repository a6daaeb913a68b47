import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from '../../lib/crypto.js';
import { verifyHubSignature } from './triggers-fns.js';

/**
 * The signature schemes a trigger may verify deliveries with (docs/api.md, "Signature schemes").
 * Every verifier works on the raw body bytes and compares in constant time; none exits early
 * on the first matching secret, so timing does not tell which secret (current or previous) matched.
 */
export const VERIFICATION_TYPES = ['secret', 'github', 'standard_webhooks', 'stripe', 'slack'] as const;
export type VerificationType = (typeof VERIFICATION_TYPES)[number];

/** The schemes whose signatures carry a timestamp, checked against `tolerance_seconds`. */
export const TIMESTAMPED: ReadonlySet<VerificationType> = new Set(['standard_webhooks', 'stripe', 'slack']);
export const DEFAULT_TOLERANCE_SECONDS = 300;

const STANDARD_PREFIX = 'whsec_';
const STANDARD_KEY_BYTES = { min: 24, max: 64 };
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** Unix seconds as sent: decimal digits only (bounded, so Number() is exact). */
const TIMESTAMP_RE = /^[0-9]{1,15}$/;

/** A generated Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateStandardSecret(): string {
  return `${STANDARD_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** Why a supplied Standard Webhooks secret is not `whsec_` + base64 of 24–64 bytes, or null when it is. */
export function standardSecretProblem(secret: string): string | null {
  const encoded = secret.startsWith(STANDARD_PREFIX) ? secret.slice(STANDARD_PREFIX.length) : null;
  if (encoded === null || encoded === '' || !BASE64_RE.test(encoded)) {
    return 'must be whsec_ followed by standard base64';
  }
  const bytes = Buffer.from(encoded, 'base64').length;
  if (bytes < STANDARD_KEY_BYTES.min || bytes > STANDARD_KEY_BYTES.max) {
    return `must encode ${STANDARD_KEY_BYTES.min} to ${STANDARD_KEY_BYTES.max} bytes`;
  }
  return null;
}

/** Whether the signed Unix-seconds timestamp `sent` is within `toleranceSeconds` of `nowMs`. */
export function timestampFresh(sent: string, nowMs: number, toleranceSeconds: number): boolean {
  if (!TIMESTAMP_RE.test(sent)) return false;
  return Math.abs(Math.floor(nowMs / 1000) - Number(sent)) <= toleranceSeconds;
}

/** Whether any of `candidates` equals `expected` (all compared, in constant time each). */
function anyEqual(candidates: readonly string[], expected: string): boolean {
  let ok = false;
  for (const candidate of candidates) ok = safeEqual(candidate, expected) || ok;
  return ok;
}

/** The headers of a Standard Webhooks delivery (`webhook-id`, `webhook-timestamp`, `webhook-signature`). */
export interface StandardHeaders {
  id: string;
  timestamp: string;
  signature: string;
}

/**
 * Standard Webhooks: some `v1,<base64>` entry of the space-separated `webhook-signature` equals
 * base64(HMAC-SHA256(key, `{id}.{timestamp}.{body}`)), key = base64 after `whsec_`; other versions
 * are ignored. The timestamp must be within the tolerance.
 */
export function verifyStandardWebhook(
  headers: StandardHeaders,
  body: Buffer,
  secrets: readonly string[],
  nowMs: number,
  toleranceSeconds: number,
): boolean {
  if (!timestampFresh(headers.timestamp, nowMs, toleranceSeconds)) return false;
  const candidates: string[] = [];
  for (const entry of headers.signature.split(' ')) {
    if (entry.startsWith('v1,')) candidates.push(entry.slice(3));
  }
  if (candidates.length === 0) return false;
  let ok = false;
  for (const secret of secrets) {
    const key = Buffer.from(secret.slice(STANDARD_PREFIX.length), 'base64');
    const expected = createHmac('sha256', key)
      .update(`${headers.id}.${headers.timestamp}.`)
      .update(body)
      .digest('base64');
    ok = anyEqual(candidates, expected) || ok;
  }
  return ok;
}

/**
 * Parses `Stripe-Signature` (`t=…,v1=…,v0=…`): exactly one `t`, the `v1` values; null when
 * malformed (an entry without `=`, no `t` or several).
 */
export function parseStripeSignature(header: string): { t: string; v1: string[] } | null {
  let t: string | null = null;
  let timestamps = 0;
  const v1: string[] = [];
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) return null;
    const key = item.slice(0, at).trim();
    const value = item.slice(at + 1).trim();
    if (key === 't') {
      t = value;
      timestamps++;
    } else if (key === 'v1') v1.push(value);
  }
  return timestamps === 1 && t !== null ? { t, v1 } : null;
}

/** Stripe: some `v1` equals hex(HMAC-SHA256(secret, `{t}.{body}`)), with `t` within the tolerance. */
export function verifyStripeSignature(
  header: string,
  body: Buffer,
  secrets: readonly string[],
  nowMs: number,
  toleranceSeconds: number,
): boolean {
  const parsed = parseStripeSignature(header);
  if (!parsed || parsed.v1.length === 0 || !timestampFresh(parsed.t, nowMs, toleranceSeconds)) return false;
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(`${parsed.t}.`).update(body).digest('hex');
    ok = anyEqual(parsed.v1, expected) || ok;
  }
  return ok;
}

/** Slack: `X-Slack-Signature` equals `v0=` + hex(HMAC-SHA256(secret, `v0:{timestamp}:{body}`)). */
export function verifySlackSignature(
  headers: { signature: string; timestamp: string },
  body: Buffer,
  secrets: readonly string[],
  nowMs: number,
  toleranceSeconds: number,
): boolean {
  if (!timestampFresh(headers.timestamp, nowMs, toleranceSeconds)) return false;
  let ok = false;
  for (const secret of secrets) {
    const digest = createHmac('sha256', secret).update(`v0:${headers.timestamp}:`).update(body).digest('hex');
    ok = safeEqual(headers.signature, `v0=${digest}`) || ok;
  }
  return ok;
}

/** Slack's URL verification handshake: a JSON object `{"type": "url_verification", "challenge": "<string>"}`. */
export function slackChallenge(payload: unknown): string | null {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const { type, challenge } = payload as Record<string, unknown>;
  return type === 'url_verification' && typeof challenge === 'string' ? challenge : null;
}

/**
 * The delivery id a scheme reads from the payload: Stripe's event `id`; Slack's Events API
 * `event_id`, else its `trigger_id` (slash commands and interactivity: one per user action); each
 * only as a non-empty string at the top level. Else undefined (section 7's headers count).
 */
export function payloadDeliveryId(type: VerificationType, payload: unknown): string | undefined {
  const fields = type === 'stripe' ? ['id'] : type === 'slack' ? ['event_id', 'trigger_id'] : [];
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  for (const field of fields) {
    const value = (payload as Record<string, unknown>)[field];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** Whether a delivery proved knowledge of the trigger's secret: `ok`, or why not (section 7's two 401s). */
export type SchemeAuth = 'ok' | 'missing' | 'invalid';

type Headers = Record<string, string | string[] | undefined>;

const read = (headers: Headers, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** What a signed scheme checks a delivery against: the active secrets, the clock and the tolerance. */
export interface SchemeKeys {
  secrets: readonly string[];
  nowMs: number;
  toleranceSeconds: number;
}

/**
 * Authenticates a delivery under one of the signed schemes (not `secret`, whose path stays in
 * webhook-service): `missing` when a header the scheme needs is absent, `invalid` when a header is
 * malformed, the timestamp is outside the tolerance or no signature matches.
 */
export function authenticateScheme(
  type: Exclude<VerificationType, 'secret'>,
  headers: Headers,
  body: Buffer,
  keys: SchemeKeys,
): SchemeAuth {
  const { secrets, nowMs, toleranceSeconds } = keys;
  const verdict = (ok: boolean): SchemeAuth => (ok ? 'ok' : 'invalid');
  switch (type) {
    case 'github': {
      const signature = read(headers, 'x-hub-signature-256');
      if (signature === undefined) return 'missing';
      let ok = false;
      for (const secret of secrets) ok = verifyHubSignature(signature, body, secret) || ok;
      return verdict(ok);
    }
    case 'standard_webhooks': {
      const id = read(headers, 'webhook-id');
      const timestamp = read(headers, 'webhook-timestamp');
      const signature = read(headers, 'webhook-signature');
      if (id === undefined || timestamp === undefined || signature === undefined) return 'missing';
      return verdict(verifyStandardWebhook({ id, timestamp, signature }, body, secrets, nowMs, toleranceSeconds));
    }
    case 'stripe': {
      const signature = read(headers, 'stripe-signature');
      if (signature === undefined) return 'missing';
      return verdict(verifyStripeSignature(signature, body, secrets, nowMs, toleranceSeconds));
    }
    case 'slack': {
      const signature = read(headers, 'x-slack-signature');
      const timestamp = read(headers, 'x-slack-request-timestamp');
      if (signature === undefined || timestamp === undefined) return 'missing';
      return verdict(verifySlackSignature({ signature, timestamp }, body, secrets, nowMs, toleranceSeconds));
    }
  }
}
