/** A unique constraint was violated: the same error on SQLite and PostgreSQL. */
export class UniqueViolationError extends Error {
  constructor(
    readonly constraint: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(`Unique constraint violated${constraint ? `: ${constraint}` : ''}`, options);
  }
}

/**
 * Text the database cannot store: PostgreSQL refuses a NUL character (U+0000) in text and jsonb,
 * and text not valid in the database encoding. Caused by input, so it is answered 400.
 */
export class UnstorableTextError extends Error {}

const PG_UNSTORABLE = new Set(['22021', '22P05']);

/** The database could not be reached (connection refused, dropped, or shutting down). */
export class DbUnavailableError extends Error {}

const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '08000', '08003', '08006', '08001']);
const NET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND']);

/** Translates a driver error into the portable errors above, or returns it unchanged. */
export function translateDbError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (code === '23505') {
    return new UniqueViolationError((err as { constraint?: string }).constraint, { cause: err });
  }
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new UniqueViolationError(err.message.split(': ')[1], { cause: err });
  }
  if (typeof code === 'string' && PG_UNSTORABLE.has(code)) return new UnstorableTextError(err.message, { cause: err });
  if (
    (typeof code === 'string' && (PG_UNAVAILABLE.has(code) || NET_UNAVAILABLE.has(code))) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
      err.message,
    )
  ) {
    return new DbUnavailableError(err.message, { cause: err });
  }
  return err;
}

/** True when `err` (raw or translated) is a unique violation. */
export function isUniqueViolation(err: unknown): boolean {
  return translateDbError(err) instanceof UniqueViolationError;
}

/** Awaits a query, translating a driver error into the portable errors above. */
export async function withDbErrors<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw translateDbError(err);
  }
}
