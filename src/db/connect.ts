import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, type Dialect as KyselyDialect, type LogEvent, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type { Database } from './database.js';
import { createGroupCommitter } from './group-commit.js';
import { listenPostgres, type SubscribeHandlers, type Subscription } from './pg-listen.js';
import { createPgPool, type PgPoolOptions } from './pg-pool.js';
import { registerDirectReader } from './prepared.js';
import { checkedDialect, type Executor, runTransaction } from './transactions.js';

export type { Executor } from './transactions.js';
export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  readonly dialect: Dialect;
  readonly kysely: Kysely<Database>;
  /**
   * Runs `fn` in a transaction and resolves only after the commit is durable.
   * On SQLite, calls that arrive together are group-committed: one transaction, one fsync,
   * each call isolated in its own savepoint so a failing call rolls back only its own writes.
   * `fn` must use only the executor it is given and do no slow non-database work; what must
   * happen after the commit it schedules with `afterCommit(trx, hook)` (see transactions.ts).
   */
  transaction<T>(fn: (trx: Executor) => Promise<T>): Promise<T>;
  /**
   * PostgreSQL only: LISTEN on channels with one dedicated connection (see pg-listen.ts).
   * Absent on SQLite, which has no way to announce a change to another process.
   */
  listen?: (channels: readonly string[], handlers: SubscribeHandlers) => Subscription;
  /**
   * SQLite only: calls `onChange` (within about `OTHER_WRITERS_POLL_MS`) after another connection
   * (the CLI, another process on the same file) committed a change, as seen by `PRAGMA
   * data_version` on the writer connection, which this process's own commits do not move.
   * Absent for an in-memory database, which no other connection can reach.
   */
  watchOtherWriters?: (onChange: () => void) => Subscription;
  /** PostgreSQL only: the pool's connections (open, idle) and the queries waiting for one. */
  poolStats?: () => { total: number; idle: number; waiting: number };
  /** Hears the duration of every query that goes through Kysely, in milliseconds (metrics). */
  onQuery(listener: (ms: number) => void): void;
  /** A trivial query; throws when the database cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  databaseUrl?: string | undefined;
  /** SQLite file path, or ':memory:'. Used when databaseUrl is unset. */
  sqliteFile: string;
  sqliteSynchronous: 'full' | 'normal';
  /** PostgreSQL pool size. */
  poolSize?: number;
  /** Other PostgreSQL settings (see pg-pool.ts); defaults when absent. */
  pg?: Partial<Pick<PgPoolOptions, 'idleTimeoutMs' | 'statementTimeoutMs' | 'preparedStatements'>>;
  onPoolError?: (err: Error) => void;
  /** Make a root-handle query inside a transaction's function throw (see checkedDialect); for tests. */
  checkTransactions?: boolean;
}

/** Opens the configured database: PostgreSQL when a URL is given, else the embedded SQLite file. */
export function connectDb(opts: ConnectOptions): Db {
  return opts.databaseUrl ? connectPostgres(opts.databaseUrl, opts) : connectSqlite(opts);
}

const checked = (dialect: KyselyDialect, opts: ConnectOptions) =>
  opts.checkTransactions ? checkedDialect(dialect) : dialect;

function connectSqlite(opts: ConnectOptions): Db {
  if (opts.sqliteFile !== ':memory:') mkdirSync(path.dirname(opts.sqliteFile), { recursive: true });
  const native = new SqliteDatabase(opts.sqliteFile);
  native.pragma('journal_mode = WAL');
  // 'full' durability is kept by syncing the WAL ourselves before acknowledging (createWalSync),
  // off the event loop; SQLite itself runs with NORMAL so a COMMIT never blocks on an fsync.
  native.pragma('synchronous = NORMAL');
  native.pragma('busy_timeout = 5000');
  native.pragma('foreign_keys = ON');
  const timing = queryTiming();
  const writerStatements = withStatementCache(native);
  const kysely = new Kysely<Database>({
    dialect: checked(new SqliteDialect({ database: writerStatements }), opts),
    log: timing.log,
  });
  const reader = opts.sqliteFile === ':memory:' ? null : openReader(opts.sqliteFile);
  if (reader) registerDirectReader(kysely, reader.read);
  const stopSchemaWatch = watchSchema(native, reader ? [writerStatements, reader.statements] : [writerStatements]);
  const wal =
    opts.sqliteSynchronous === 'full' && opts.sqliteFile !== ':memory:' ? createWalSync(opts.sqliteFile) : null;
  const groupCommit = createGroupCommitter(kysely, { sync: wal ? () => wal.sync() : undefined });
  return {
    dialect: 'sqlite',
    kysely,
    transaction: (fn) => groupCommit.run(fn),
    ...(opts.sqliteFile === ':memory:' ? {} : { watchOtherWriters: (onChange) => watchDataVersion(native, onChange) }),
    onQuery: timing.onQuery,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    close: async () => {
      await groupCommit.drain();
      wal?.close();
      stopSchemaWatch();
      reader?.close();
      await kysely.destroy();
    },
  };
}

/**
 * fdatasync of the WAL file in libuv's thread pool. A caller's commit is durable once a sync
 * that started after it completes; callers arriving during a sync share the next one.
 */
function createWalSync(dbFile: string) {
  let fd: number | undefined;
  let current: Promise<void> | null = null;
  let next: Promise<void> | null = null;

  function run(): Promise<void> {
    const started = new Promise<void>((resolve, reject) => {
      if (fd === undefined) {
        fd = openSync(`${dbFile}-wal`, 'r+');
        // Make the WAL file's directory entry durable too, once.
        const dir = openSync(path.dirname(dbFile), 'r');
        try {
          fsyncSync(dir);
        } finally {
          closeSync(dir);
        }
      }
      fdatasync(fd, (err) => (err ? reject(err) : resolve()));
    });
    current = started;
    void started.then(
      () => {
        if (current === started) current = null;
      },
      () => {
        if (current === started) current = null;
      },
    );
    return started;
  }

  return {
    sync(): Promise<void> {
      if (!current) return run();
      next ??= current.then(
        () => {
          next = null;
          return run();
        },
        () => {
          next = null;
          return run();
        },
      );
      return next;
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** How often an instance on SQLite looks whether another process wrote to its database file. */
export const OTHER_WRITERS_POLL_MS = 100;

function watchDataVersion(native: SqliteDatabase.Database, onChange: () => void): Subscription {
  const version = () => native.pragma('data_version', { simple: true }) as number;
  let last = version();
  const timer = setInterval(() => {
    if (!native.open) return;
    const now = version();
    if (now !== last) {
      last = now;
      onChange();
    }
  }, OTHER_WRITERS_POLL_MS);
  timer.unref();
  return {
    close: async () => clearInterval(timer),
  };
}

/**
 * A second, query-only connection for the hot reads outside transactions (prepareQuery): in WAL
 * mode it reads the last committed state without taking the writer connection, so a status poll
 * never queues behind a group-commit batch, and it runs without Kysely's per-query promise chain.
 */
function openReader(file: string) {
  const native = new SqliteDatabase(file);
  native.pragma('busy_timeout = 5000');
  native.pragma('query_only = ON');
  const statements = withStatementCache(native);
  return {
    statements,
    read: (text: string, parameters: readonly unknown[]) => statements.prepare(text).all(...parameters),
    close: () => native.close(),
  };
}

const STATEMENT_CACHE_SIZE = 1000;

/**
 * Kysely prepares every query anew; preparing costs more than running a small indexed query,
 * so prepared statements are kept per SQL text (bounded, oldest dropped first).
 */
function withStatementCache(native: SqliteDatabase.Database) {
  const cache = new Map<string, SqliteDatabase.Statement>();
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
function withRowObjects(stmt: SqliteDatabase.Statement): SqliteDatabase.Statement {
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
  return rows as unknown as SqliteDatabase.Statement;
}

/**
 * Drops the cached statements of `caches` when the database's schema version moves (another
 * connection migrated it), looked at every OTHER_WRITERS_POLL_MS: statements prepared afterwards
 * name the columns as they now are.
 */
function watchSchema(native: SqliteDatabase.Database, caches: Array<{ clear(): void }>): () => void {
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

/** Kysely's query log turned into duration listeners (none until a listener subscribes). */
function queryTiming() {
  const listeners: Array<(ms: number) => void> = [];
  return {
    log: (event: LogEvent) => {
      for (const listener of listeners) listener(event.queryDurationMillis);
    },
    onQuery: (listener: (ms: number) => void) => {
      listeners.push(listener);
    },
  };
}

function connectPostgres(url: string, opts: ConnectOptions): Db {
  const pool = createPgPool(url, {
    poolSize: opts.poolSize ?? 10,
    idleTimeoutMs: opts.pg?.idleTimeoutMs ?? 10_000,
    statementTimeoutMs: opts.pg?.statementTimeoutMs ?? 0,
    preparedStatements: opts.pg?.preparedStatements ?? true,
    onError: opts.onPoolError,
  });
  const timing = queryTiming();
  const kysely = new Kysely<Database>({ dialect: checked(new PostgresDialect({ pool }), opts), log: timing.log });
  return {
    dialect: 'postgres',
    kysely,
    transaction: (fn) => runTransaction(kysely, fn),
    listen: (channels, handlers) => listenPostgres(url, channels, handlers),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    onQuery: timing.onQuery,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    close: () => kysely.destroy(),
  };
}
