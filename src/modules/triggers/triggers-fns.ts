import { createHmac, timingSafeEqual } from 'node:crypto';
import { randomSecret, safeEqual } from '../../lib/crypto.js';
import { jsonHasNul, jsonTooDeep, MAX_JSON_DEPTH } from '../../lib/json-depth.js';

/** A new webhook secret: `whs_` + 32 random bytes, URL-safe base64. */
export function generateWebhookSecret(): string {
  return `whs_${randomSecret(32)}`;
}

const SIGNATURE_RE = /^sha256=([0-9a-f]{64})$/i;

/**
 * Checks `X-Hub-Signature-256: sha256=<hex>` against the HMAC-SHA256 of the raw body with
 * `secret`, in constant time. Anything malformed (sha1=, truncated, non-hex) is false.
 */
export function verifyHubSignature(header: string, body: Buffer, secret: string): boolean {
  const match = SIGNATURE_RE.exec(header.trim());
  if (!match?.[1]) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(Buffer.from(match[1].toLowerCase(), 'hex'), expected);
}

/**
 * Whether the request proves knowledge of one of `secrets`: it presents at least one credential
 * (X-Webhook-Secret, X-Hub-Signature-256), and every credential it presents matches the same secret.
 */
export function authenticateDelivery(
  presented: { secret?: string | undefined; signature?: string | undefined },
  body: Buffer,
  secrets: string[],
): boolean {
  if (presented.secret === undefined && presented.signature === undefined) return false;
  let ok = false;
  for (const secret of secrets) {
    const secretOk = presented.secret === undefined || safeEqual(presented.secret, secret);
    const signatureOk = presented.signature === undefined || verifyHubSignature(presented.signature, body, secret);
    // No early exit: every secret is checked, so timing does not reveal which one matched.
    ok = (secretOk && signatureOk) || ok;
  }
  return ok;
}

/** The delivery id an external system sent, in order of preference (docs/api.md §7.4). */
export function incomingDeliveryId(headers: Record<string, string | string[] | undefined>): string | undefined {
  for (const name of ['x-github-delivery', 'webhook-id', 'idempotency-key']) {
    const value = headers[name];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

export type BodyKind = 'json' | 'form' | 'unsupported';

/** JSON (`application/json`, `application/*+json`) or GitHub's form encoding; anything else is refused. */
export function bodyKind(contentType: string | undefined): BodyKind {
  const type = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) return 'json';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  return 'unsupported';
}

/** A form without a `payload` field as the payload (Slack's slash commands): its fields, the last value of a repeated name. */
function formPayload(form: URLSearchParams): { ok: true; payload: unknown } | { ok: false; reason: string } {
  const payload: Record<string, string> = {};
  for (const [name, value] of form) {
    if (name.includes('\u0000') || value.includes('\u0000')) {
      return { ok: false, reason: 'body contains a NUL character (U+0000), which cannot be stored' };
    }
    // Defined, not assigned: a field named __proto__ is a field like any other.
    Object.defineProperty(payload, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return { ok: true, payload };
}

/**
 * The JSON payload of a delivery body, or an error reason. A form body carries it in its
 * `payload` field; with `formFields` (slack triggers) a form without one is the object of its fields.
 */
export function parsePayload(
  kind: 'json' | 'form',
  body: Buffer,
  formFields = false,
): { ok: true; payload: unknown } | { ok: false; reason: string } {
  let text = body.toString('utf8');
  if (kind === 'form') {
    const form = new URLSearchParams(text);
    const payload = form.get('payload');
    if (payload === null)
      return formFields ? formPayload(form) : { ok: false, reason: 'form body has no payload field' };
    text = payload;
  }
  if (jsonTooDeep(text)) return { ok: false, reason: `body nests deeper than ${MAX_JSON_DEPTH} levels` };
  if (jsonHasNul(text)) return { ok: false, reason: 'body contains a NUL character (U+0000), which cannot be stored' };
  try {
    return { ok: true, payload: JSON.parse(text) };
  } catch {
    return { ok: false, reason: 'body is not valid JSON' };
  }
}
