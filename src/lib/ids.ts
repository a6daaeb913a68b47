import { randomUUID } from 'node:crypto';
import { uuidv7 } from 'uuidv7';

/** A new time-ordered identifier (UUID v7) for rows the service creates. */
export function newId(): string {
  return uuidv7();
}

/** A fully random UUID (v4): for secrets such as ingest tokens, where ordering would leak entropy. */
export function newRandomUuid(): string {
  return randomUUID();
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when the string is a UUID in its canonical 8-4-4-4-12 hex form. */
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
