import type BetterSqlite3 from 'better-sqlite3';

/*
 * The embedded database's statements: kept per SQL text, rows built in JavaScript, and both
 * dropped when another connection changes the schema. Used by both SQLite connections of
 * connect.ts (the writer and the read-only reader).
 */

/** How often an instance on SQLite looks whether another process wrote to its database file. */
export const OTHER_WRITERS_POLL_MS = 100;

const STATEMENT_CACHE_SIZE = 1000;

/** A connection's statements by SQL text, as Kysely's SQLite dialect takes a database. */
export interface StatementCache {
  close(): void;
  /** Forgets every statement (the next use of a text prepares it again). */
  clear(): void;
  prepare(text: string): BetterSqlite3.Statement;
}

/**
 * Kysely prepares every query anew; preparing costs more than running a small indexed query,
 * so prepared statements are kept per SQL text (bounded, oldest dropped first).
 */
export function withStatementCache(native: BetterSqlite3.Database): StatementCache {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => native.close(),
    clear: () => cache.clear(),
    prepare(text: string) {
      let stmt = cache.get(text);
      if (!stmt) {
        stmt = withRowObjects(native.prepare(text));
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(text, stmt);
      }
      return stmt;
    },
  };
}

/**
 * A statement that returns rows, made to read them as arrays and build each row object with a
 * compiled object literal: better-sqlite3 sets a row object's properties one by one through
 * V8's API, which costs about 0.2 µs per column (a task row of 33 columns: 17.8 → 11.5 µs per
 * read, docs/benchmarks.md). Rows are the same objects, keys in column order (a repeated name: the
 * last one wins, as before). Other statements are returned as they are.
 */
function withRowObjects(stmt: BetterSqlite3.Statement): BetterSqlite3.Statement {
  if (!stmt.reader) return stmt;
  const raw = stmt.raw(true);
  let names: string[] = [];
  let toRow: (values: unknown[]) => Record<string, unknown> = () => ({});
  const compile = () => {
    names = raw.columns().map((c) => c.name);
    // The names are SQLite's own column names of our SQL, written as JSON string literals.
    toRow = new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (
      values: unknown[],
    ) => Record<string, unknown>;
  };
  compile();
  // SQLite re-prepares a statement by itself after another connection changed the schema; a
  // `select *` then returns other columns. A different count is caught here at once; the
  // connection also drops its statements when the schema version moves (watchSchema).
  const fresh = (values: unknown[]) => {
    if (values.length !== names.length) compile();
  };
  // What Kysely and the reader use of a statement; the native methods are called on the native one.
  const rows = {
    reader: true,
    source: raw.source,
    all: (...args: unknown[]) => {
      const found = raw.all(...args) as unknown[][];
      if (found[0]) fresh(found[0]);
      return found.map(toRow);
    },
    get: (...args: unknown[]) => {
      const values = raw.get(...args) as unknown[] | undefined;
      if (!values) return undefined;
      fresh(values);
      return toRow(values);
    },
    *iterate(...args: unknown[]) {
      for (const values of raw.iterate(...args) as IterableIterator<unknown[]>) {
        fresh(values);
        yield toRow(values);
      }
    },
    run: (...args: unknown[]) => raw.run(...args),
    columns: () => raw.columns(),
  };
  return rows as unknown as BetterSqlite3.Statement;
}

/**
 * Drops the cached statements of `caches` when the database's schema version moves (another
 * connection migrated it), looked at every OTHER_WRITERS_POLL_MS: statements prepared afterwards
 * name the columns as they now are.
 */
export function watchSchema(native: BetterSqlite3.Database, caches: Array<{ clear(): void }>): () => void {
  const version = () => native.pragma('schema_version', { simple: true }) as number;
  let last = version();
  const timer = setInterval(() => {
    if (!native.open) return;
    const now = version();
    if (now === last) return;
    last = now;
    for (const cache of caches) cache.clear();
  }, OTHER_WRITERS_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
