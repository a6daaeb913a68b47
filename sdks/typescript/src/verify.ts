import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookEvent } from './types.js';

/** A callback that fails verification: wrong signature, stale timestamp, missing header, not JSON. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/**
 * Checks a callback signed as Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)
 * and returns its parsed body. `payload` must be the raw body as received; `secret` is the signing
 * secret `whsec_…` (or several during a rotation).
 * @throws WebhookVerificationError when anything is wrong.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: HeaderBag,
  secret: string | string[],
  { toleranceSeconds = 300 }: { toleranceSeconds?: number } = {},
): WebhookEvent {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signature)
    throw new WebhookVerificationError('Missing webhook-id, -timestamp or -signature');
  // 1–19 ASCII digits only: no sign, space, underscore or other script's digits.
  if (!/^[0-9]{1,19}$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a Unix time');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) {
    throw new WebhookVerificationError('webhook-timestamp is outside the tolerance');
  }
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  const given = signature
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice(3), 'base64'));
  const matches = (Array.isArray(secret) ? secret : [secret]).some((s) => {
    const expected = createHmac('sha256', keyOf(s))
      .update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), body]))
      .digest();
    return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected));
  });
  if (!matches) throw new WebhookVerificationError('No signature matches');
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('The payload is not JSON');
  }
}
