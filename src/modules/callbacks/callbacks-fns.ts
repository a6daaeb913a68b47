import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signature: base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed with the
 * base64-decoded part of a `whsec_` secret; one `v1,<sig>` per secret, space-separated.
 */
export function signatureHeader(id: string, timestamp: number, body: string, secrets: string[]): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}

/** Seconds to wait before attempt `failedAttempts + 1`, or null when the schedule is exhausted. */
export function nextDelaySeconds(schedule: number[], failedAttempts: number, random = Math.random): number | null {
  const base = schedule[failedAttempts - 1];
  if (base === undefined) return null;
  return base * (0.8 + 0.4 * random()); // ±20% jitter
}

/** The three HTTP-date forms (RFC 9110 §5.6.7): IMF-fixdate, RFC 850, asctime (which is GMT too). */
const HTTP_DATE = [
  /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
  /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/,
  /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/,
];

/**
 * A Retry-After header (delay seconds or an HTTP date) in seconds, capped at a day; null when
 * absent or invalid (anything else, even what `Date.parse` would guess a date from).
 */
export function retryAfterSeconds(value: string | undefined, now: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed), 86_400);
  const form = HTTP_DATE.findIndex((re) => re.test(trimmed));
  if (form < 0) return null;
  const at = Date.parse(form === 2 ? `${trimmed} GMT` : trimmed);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, (at - now) / 1000), 86_400);
}

/** What an attempt's answer means for the delivery. */
export function classify(statusCode: number | null): 'delivered' | 'gone' | 'retry' {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return 'delivered';
  if (statusCode === 410) return 'gone';
  return 'retry';
}

export const ANNOUNCED_STATUSES = new Set(['awaiting_input', 'completed', 'failed', 'cancelled']);

/**
 * Which of the due deliveries (oldest first) to send now: at most `room` in all and at most
 * `perUser` in flight per account, counting `held` (the account's attempts already in flight).
 * `full` names the accounts that have no slot left, so the next look can skip their deliveries.
 */
export function pickFair<T extends { userUuid: string }>(
  due: readonly T[],
  held: ReadonlyMap<string, number>,
  perUser: number,
  room: number,
): { take: T[]; full: string[] } {
  const counts = new Map(held);
  const take: T[] = [];
  const full = new Set<string>();
  for (const row of due) {
    if (take.length >= room) break;
    const count = counts.get(row.userUuid) ?? 0;
    if (count >= perUser) {
      full.add(row.userUuid);
      continue;
    }
    take.push(row);
    counts.set(row.userUuid, count + 1);
    if (count + 1 >= perUser) full.add(row.userUuid);
  }
  return { take, full: [...full] };
}
