import { chmodSync, closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, type Dialect as KyselyDialect, type LogEvent, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type { Database } from './database.js';
import { createGroupCommitter } from './group-commit.js';
import { createPgListener, type SubscribeHandlers, type Subscription } from './pg-listen.js';
import { createPgPool, type PgPoolOptions } from './pg-pool.js';
import { registerDirectReader } from './prepared.js';
import SqliteDatabase, { keepTemporariesIn } from './sqlite-driver.js';
import { OTHER_WRITERS_POLL_MS, watchSchema, withStatementCache } from './sqlite-statements.js';
import { checkedDialect, type Executor, runTransaction } from './transactions.js';

export { OTHER_WRITERS_POLL_MS } from './sqlite-statements.js';
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
   * PostgreSQL only: LISTEN on channels. Every subscription of this handle shares one dedicated
   * connection (see pg-listen.ts). Absent on SQLite, which has no way to announce a change to
   * another process.
   */
  listen?: (channels: readonly string[], handlers: SubscribeHandlers) => Subscription;
  /** PostgreSQL only: a NOTIFY sent over the listening connection, dropped while it is down. */
  notify?: (channel: string, payload: string) => void;
  /**
   * SQLite only: calls `onChange` (within about `OTHER_WRITERS_POLL_MS`) after another connection
   * (the CLI, another process on the same file) committed a change, as seen by `PRAGMA
   * data_version` on the writer connection, which this process's own commits do not move.
   * Absent for an in-memory database, which no other connection can reach.
   */
  watchOtherWriters?: (onChange: () => void) => Subscription;
  /**
   * SQLite only: lets a migration edit `sqlite_master` (SQLite's documented way to change a
   * foreign key in place), which the driver's defensive mode otherwise forbids. Only migrations use it.
   */
  allowSchemaEdits?: (on: boolean) => void;
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

/**
 * Creates the database file owner-only (0600) before SQLite opens it, whatever the umask, and
 * narrows one left by an earlier version: it holds password hashes and sealed secrets. SQLite
 * gives its WAL and shared-memory files the mode of the database file.
 */
function ownerOnly(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(f, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

function connectSqlite(opts: ConnectOptions): Db {
  if (opts.sqliteFile !== ':memory:') ownerOnly(opts.sqliteFile);
  const native = new SqliteDatabase(opts.sqliteFile);
  if (opts.sqliteFile !== ':memory:') keepTemporariesIn(native, path.dirname(path.resolve(opts.sqliteFile)));
  native.pragma('journal_mode = WAL');
  // 'full' durability is kept by syncing the WAL ourselves before acknowledging (createWalSync),
  // off the event loop; SQLite itself runs with NORMAL so a COMMIT never blocks on an fsync.
  native.pragma('synchronous = NORMAL');
  native.pragma('busy_timeout = 5000');
  native.pragma('foreign_keys = ON');
  const timing = queryTiming();
  const writerStatements = withStatementCache(native);
  // Kysely begins transactions DEFERRED: one that reads and then writes after another process
  // (the CLI beside the server) committed cannot be upgraded and fails at once with "database is
  // locked", busy timeout or not. IMMEDIATE takes the write lock first, waiting up to busy_timeout.
  const writer: typeof writerStatements = {
    ...writerStatements,
    prepare: (text: string) => writerStatements.prepare(text === 'begin' ? 'begin immediate' : text),
  };
  const kysely = new Kysely<Database>({
    dialect: checked(new SqliteDialect({ database: writer }), opts),
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
    allowSchemaEdits: (on) => {
      native.unsafeMode(on);
    },
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

function watchDataVersion(native: BetterSqlite3.Database, onChange: () => void): Subscription {
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
  const listener = createPgListener(url);
  return {
    dialect: 'postgres',
    kysely,
    transaction: (fn) => runTransaction(kysely, fn),
    listen: listener.listen,
    notify: listener.notify,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    onQuery: timing.onQuery,
    ping: async () => {
      await sql`select 1`.execute(kysely);
    },
    close: async () => {
      await listener.close();
      await kysely.destroy();
    },
  };
}
