import { AppError } from '../http/errors.js';

/** What the CLI says when SQLite's writer stayed busy for the whole busy timeout. */
export const BUSY_MESSAGE =
  'the database stayed locked by another writer (the server, or another command) for 5 s, the busy timeout; nothing was changed: try again';

/** The one line the CLI prints for an error it cannot go on from. */
export function failureMessage(err: unknown): string {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return BUSY_MESSAGE;
  if (err instanceof AppError) return err.message;
  return err instanceof Error ? err.message : String(err);
}
