import type { LookupAddress } from 'node:dns';
import path from 'node:path';
import type { Redis } from 'ioredis';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { connectDb, type Db } from './db/connect.js';
import { migrateToLatest } from './db/migrate.js';
import {
  type CounterStore,
  createMemoryStore,
  createPostgresStore,
  createRedisStore,
} from './http/rate-limit-stores.js';
import { createPasswordHasher, type PasswordHasher } from './lib/passwords.js';
import { resolveSecrets, type ServiceSecrets } from './lib/secrets.js';
import { type Clock, systemClock, systemTimers, type Timers } from './lib/time.js';

/** Paths of request data that must never reach a log line. */
export const REDACT = [
  'req.headers.authorization',
  'req.headers["x-service-api-key"]',
  'req.headers["x-api-key"]',
  'req.headers["x-webhook-secret"]',
  'req.headers["x-hub-signature-256"]',
  'req.headers.cookie',
  '*.password',
  '*.current_password',
  '*.new_password',
  '*.token',
  '*.key',
  '*.secret',
  '*.webhook_secret',
];

/** Everything the app needs from outside itself: storage, secrets, counters, time, logs. */
export interface ProcessDeps {
  db: Db;
  secrets: ServiceSecrets;
  /** The request rate limit's counters, which the model proxy's RPM/TPM limits share. */
  rateLimitStore: CounterStore;
  clock: Clock;
  /** Repeating timers (stream heartbeats and credential re-checks). */
  timers: Timers;
  logger: Logger;
  /** Password hashing, bounded for the whole process. */
  passwords: PasswordHasher;
  redis: Redis | null;
  /** Name resolution for outbound calls; the system resolver unless a test gives its own. */
  lookup?: ((host: string) => Promise<LookupAddress[]>) | undefined;
  close(): Promise<void>;
}

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACT, censor: '[redacted]' } });
}

/** Connects the configured storage (SQLite in the data dir, or PostgreSQL); runs nothing on it. */
export function openDb(config: Config, logger: Logger, opts: { checkTransactions?: boolean | undefined } = {}): Db {
  return connectDb({
    databaseUrl: config.databaseUrl,
    sqliteFile: path.join(config.dataDir, 'taskhook.sqlite'),
    sqliteSynchronous: config.sqliteSynchronous,
    poolSize: config.pgPoolSize,
    pg: {
      idleTimeoutMs: config.pgIdleTimeoutMs,
      statementTimeoutMs: config.pgStatementTimeoutMs,
      preparedStatements: config.pgPreparedStatements,
    },
    onPoolError: (err) => logger.warn({ err }, 'idle database connection failed'),
    checkTransactions: opts.checkTransactions,
  });
}

/** Connects storage (running migrations), resolves secrets and picks the rate-limit store. */
export async function openProcessDeps(
  config: Config,
  opts: {
    logger?: Logger;
    clock?: Clock;
    timers?: Timers;
    passwords?: PasswordHasher;
    lookup?: (host: string) => Promise<LookupAddress[]>;
    /** Make a root-handle query inside a transaction throw instead of waiting (tests). */
    checkTransactions?: boolean;
  } = {},
): Promise<ProcessDeps> {
  const logger = opts.logger ?? createLogger(config);
  const db = openDb(config, logger, { checkTransactions: opts.checkTransactions });
  try {
    await migrateToLatest(db);
    const secrets = await resolveSecrets(config, db);
    // Loaded only when configured: ioredis costs about 24 MB of memory to a server that does not use it.
    const redis = config.redisUrl
      ? new (await import('ioredis')).Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 })
      : null;
    redis?.on('error', (err) => logger.warn({ err }, 'redis error'));
    const rateLimitStore = redis
      ? createRedisStore(redis)
      : db.dialect === 'postgres'
        ? createPostgresStore(db)
        : createMemoryStore();
    return {
      db,
      secrets,
      rateLimitStore,
      clock: opts.clock ?? systemClock,
      timers: opts.timers ?? systemTimers,
      logger,
      passwords: opts.passwords ?? createPasswordHasher(),
      redis,
      lookup: opts.lookup,
      async close() {
        redis?.disconnect();
        await db.close();
      },
    };
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}
