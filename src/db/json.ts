/** JSON goes in as text on both dialects (PostgreSQL casts it to jsonb). */
export function toDbJson(value: unknown): string {
  return JSON.stringify(value);
}

/** JSON comes back as text from SQLite and already parsed from PostgreSQL's jsonb. */
export function fromDbJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}
