import { CompiledQuery, SqliteAdapter, sql } from 'kysely';
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

/** SQL texts of `insertRows`, most recently written last; at most INSERT_TEXTS are kept. */
const insertTexts = new Map<string, string>();
const INSERT_TEXTS = 256;

/**
 * `insert into table (columns) values (…), (…) suffix` for `rows` rows, in the dialect's
 * placeholders (SQLite `?`, PostgreSQL `$n`); written once per shape and kept (bounded).
 * Column names and `suffix` are the caller's own SQL, never input.
 */
export function insertText(postgres: boolean, table: string, columns: readonly string[], rows: number, suffix = '') {
  const key = `${postgres}|${table}|${columns.join()}|${rows}|${suffix}`;
  let text = insertTexts.get(key);
  if (text !== undefined) return text;
  const width = columns.length;
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) {
    const marks: string[] = [];
    for (let c = 1; c <= width; c++) marks.push(postgres ? `$${r * width + c}` : '?');
    tuples.push(`(${marks.join(', ')})`);
  }
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const names = columns.map(quote).join(', ');
  text = `insert into ${quote(table)} (${names}) values ${tuples.join(', ')}${suffix ? ` ${suffix}` : ''}`;
  if (insertTexts.size >= INSERT_TEXTS) insertTexts.delete(insertTexts.keys().next().value as string);
  insertTexts.set(key, text);
  return text;
}

/**
 * Inserts rows given as one flat list of values (each row's in `columns` order), in one
 * statement per MAX_PARAMETERS, without Kysely's query builder: for a wide multi-row insert that
 * builder cost more than the write (docs/benchmarks.md). Returns what `suffix`'s RETURNING gives.
 */
export async function insertRows<Row = never>(
  ex: Executor,
  table: string,
  columns: readonly string[],
  values: readonly unknown[],
  suffix = '',
): Promise<Row[]> {
  if (columns.length === 0 || columns.length > MAX_PARAMETERS || values.length % columns.length !== 0) {
    throw new Error(`insertRows: ${values.length} values do not make rows of ${columns.length} columns`);
  }
  const postgres = !(ex.getExecutor().adapter instanceof SqliteAdapter);
  const perStatement = Math.floor(MAX_PARAMETERS / columns.length) * columns.length;
  const out: Row[] = [];
  for (let at = 0; at < values.length; at += perStatement) {
    const part = values.length <= perStatement ? values : values.slice(at, at + perStatement);
    const text = insertText(postgres, table, columns, part.length / columns.length, suffix);
    const { rows } = await ex.executeQuery<Row>(CompiledQuery.raw(text, part as unknown[]));
    for (const row of rows) out.push(row);
  }
  return out;
}
