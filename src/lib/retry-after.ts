/** The three HTTP-date forms (RFC 9110 §5.6.7): IMF-fixdate, RFC 850, asctime (which is GMT too). */
const HTTP_DATE = [
  /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
  /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/,
  /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/,
];

/** The longest wait a Retry-After may ask for: a day. */
const MAX_SECONDS = 86_400;

/**
 * A Retry-After header (RFC 9110: delay seconds or an HTTP date) in seconds, capped at a day; null
 * when absent or invalid (anything else, even what `Date.parse` would guess a date from). The one
 * reading of the header for every outbound call: callbacks and every push runtime.
 */
export function retryAfterSeconds(value: string | string[] | null | undefined, now: number): number | null {
  const first = Array.isArray(value) ? value[0] : value;
  if (!first) return null;
  const trimmed = first.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed), MAX_SECONDS);
  const form = HTTP_DATE.findIndex((re) => re.test(trimmed));
  if (form < 0) return null;
  const at = Date.parse(form === 2 ? `${trimmed} GMT` : trimmed);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, (at - now) / 1000), MAX_SECONDS);
}

/** `retryAfterSeconds` in milliseconds. */
export function retryAfterMs(value: string | string[] | null | undefined, now: number): number | null {
  const seconds = retryAfterSeconds(value, now);
  return seconds === null ? null : seconds * 1000;
}
