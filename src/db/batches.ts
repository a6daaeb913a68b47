import { SqliteAdapter, sql } from 'kysely';
import type { Executor } from './transactions.js';

/**
 * Bind parameters one statement may carry: below SQLite's 32,766 (SQLITE_MAX_VARIABLE_NUMBER of
 * the bundled build) and PostgreSQL's 65,535. Set-based statements cut their rows to fit.
 */
export const MAX_PARAMETERS = 30_000;

/** `items` cut into runs of at most `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Gives each row of `table` (found by `key`) its own values of `columns`, in one statement per
 * `MAX_PARAMETERS`: `with v(key, c…) as (values …) update table set c = v.c … from v where
 * table.key = v.key` (PostgreSQL; SQLite since 3.33). A VALUES parameter has no column to take
 * its type from (PostgreSQL makes it text), so `pgTypes` names the cast of each non-text column.
 * Each row is `[key, ...values in the order of columns]`; each key at most once.
 */
export async function updateFromValues(
  ex: Executor,
  target: { table: string; key: string; pgTypes: Readonly<Record<string, string | undefined>> },
  columns: readonly string[],
  rows: readonly unknown[][],
): Promise<void> {
  if (columns.length === 0 || rows.length === 0) return;
  const pg = !(ex.getExecutor().adapter instanceof SqliteAdapter);
  const names = sql.join([target.key, ...columns].map((c) => sql.ref(c)));
  const set = sql.join(
    columns.map((c) => {
      const type = pg ? target.pgTypes[c] : undefined;
      const value = type ? sql`${sql.ref(`v.${c}`)}::${sql.raw(type)}` : sql.ref(`v.${c}`);
      return sql`${sql.ref(c)} = ${value}`;
    }),
  );
  const where = sql`${sql.ref(`${target.table}.${target.key}`)} = ${sql.ref(`v.${target.key}`)}`;
  for (const part of chunks(rows, Math.floor(MAX_PARAMETERS / (columns.length + 1)))) {
    const values = sql.join(part.map((row) => sql`(${sql.join(row)})`));
    await sql`with v(${names}) as (values ${values}) update ${sql.table(target.table)} set ${set} from v where ${where}`.execute(
      ex,
    );
  }
}
