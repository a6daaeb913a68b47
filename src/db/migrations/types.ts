import type { Kysely } from 'kysely';
import type { Dialect } from '../connect.js';

/** Column types that differ by dialect; every migration uses these so both schemas match. */
export function columnTypes(dialect: Dialect) {
  const pg = dialect === 'postgres';
  return {
    bool: pg ? ('boolean' as const) : ('integer' as const),
    json: pg ? ('jsonb' as const) : ('text' as const),
  };
}

export interface DialectMigration {
  up(db: Kysely<unknown>, dialect: Dialect): Promise<void>;
}
