import { AppError } from '../../http/errors.js';

/** The most patterns one key's model allowlist holds. */
export const MAX_MODEL_PATTERNS = 100;
/** The longest pattern. */
export const MAX_MODEL_PATTERN_LENGTH = 300;

const refuse = (field: string, reason: string) =>
  new AppError('INVALID_REQUEST', `Invalid request: ${field} ${reason}`, { field, reason });

/**
 * A key's model allowlist as sent (the schema has already checked it is an array of at most 100
 * entries, or null): each entry a string of 1–300 characters with at most one `*`, at its end, and
 * no entry twice.
 * @throws AppError 400 INVALID_REQUEST naming `models[<i>]` (for a duplicate, its second occurrence).
 */
export function checkModelPatterns(models: readonly unknown[] | null): string[] | null {
  if (models === null) return null;
  if (models.length > MAX_MODEL_PATTERNS) throw refuse('models', `must have at most ${MAX_MODEL_PATTERNS} entries`);
  const seen = new Set<string>();
  for (const [i, entry] of models.entries()) {
    const field = `models[${i}]`;
    if (typeof entry !== 'string') throw refuse(field, 'must be a string');
    if (entry.length < 1 || entry.length > MAX_MODEL_PATTERN_LENGTH)
      throw refuse(field, `must be 1 to ${MAX_MODEL_PATTERN_LENGTH} characters`);
    const star = entry.indexOf('*');
    if (star !== -1 && star !== entry.length - 1) throw refuse(field, 'may hold a * only as its last character');
    if (seen.has(entry)) throw refuse(field, 'repeats an earlier entry');
    seen.add(entry);
  }
  return [...seen];
}

/**
 * Whether an allowlist lets a key call the model `identifier` (`<credential name>/<model>` or
 * `route:<name>`): null allows every model; a pattern matches itself exactly, or, ending in `*`,
 * every identifier that starts with what comes before it. Case-sensitive.
 */
export function modelAllowed(models: readonly string[] | null, identifier: string): boolean {
  if (models === null) return true;
  for (const pattern of models) {
    if (pattern.endsWith('*') ? identifier.startsWith(pattern.slice(0, -1)) : identifier === pattern) return true;
  }
  return false;
}
