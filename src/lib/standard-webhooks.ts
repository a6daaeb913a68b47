import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signature: base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed with the
 * base64-decoded part of a `whsec_` secret; one `v1,<sig>` per secret, space-separated (both
 * secrets during a rotation). Used by every signed request the service sends: callbacks and the
 * http runtime.
 */
export function signatureHeader(id: string, timestamp: number, body: string, secrets: string[]): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}
