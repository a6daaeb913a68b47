import type { LookupAddress } from 'node:dns';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig, validateConfig } from '../../src/config.js';
import { createSecretBox } from '../../src/lib/crypto.js';
import type { PasswordHasher } from '../../src/lib/passwords.js';
import type { Clock, Timers } from '../../src/lib/time.js';
import { createAccountsModule } from '../../src/modules/accounts/accounts-module.js';
import type { AccountsService } from '../../src/modules/accounts/accounts-service.js';
import { createLogger, openProcessDeps, type ProcessDeps } from '../../src/process-deps.js';
import { TEST_PG_SECRETS, type TestDatabase, tempDir } from './databases.js';

export interface TestApp {
  app: FastifyInstance;
  runtime: ProcessDeps;
  config: Config;
  accounts: AccountsService;
  close(): Promise<void>;
}

/** A settable clock for tests that move time without sleeping. */
export function manualClock(start = Date.now()) {
  let now = start;
  return {
    now: () => now,
    set: (ms: number) => {
      now = ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
  } satisfies Clock & Record<string, unknown>;
}

/**
 * Repeating timers a test fires by hand: `advance(ms)` runs every callback that comes due, in
 * order, as if `ms` had passed; `count` is how many are registered (a stream holds one).
 */
export function manualTimers() {
  interface Entry {
    ms: number;
    fn: () => void;
    due: number;
  }
  const entries = new Set<Entry>();
  let now = 0;
  return {
    every(ms: number, fn: () => void) {
      const entry = { ms, fn, due: now + ms };
      entries.add(entry);
      return () => {
        entries.delete(entry);
      };
    },
    advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const next = [...entries].sort((a, b) => a.due - b.due)[0];
        if (!next || next.due > until) break;
        now = next.due;
        next.due += next.ms;
        next.fn();
      }
      now = until;
    },
    get count() {
      return entries.size;
    },
  } satisfies Timers & Record<string, unknown>;
}

/** The config a test app runs with: production defaults plus a temporary data dir. */
export function testConfig(db: TestDatabase, overrides: Partial<Config> = {}): Config {
  const base = loadConfig({ TASKHOOK_LOG_LEVEL: 'silent', TASKHOOK_SQLITE_SYNCHRONOUS: 'normal' });
  // Test files share PostgreSQL's rate-limit counters (and 127.0.0.1); only rate-limit tests set a real limit.
  return validateConfig({
    ...base,
    rateLimit: 1_000_000,
    // Housekeeping deletes across the database; on the shared PostgreSQL database only files that
    // own their storage run it (and they call it directly).
    housekeepingIntervalMs: 3_600_000,
    dataDir: tempDir(),
    databaseUrl: db.databaseUrl,
    ...(db.databaseUrl ? TEST_PG_SECRETS : {}),
    ...overrides,
  });
}

/**
 * The production app (buildApp) over a real database: a fresh SQLite file, or the shared
 * PostgreSQL test database (every test makes its own users, so tests never collide).
 */
export async function buildTestApp(
  db: TestDatabase,
  opts: {
    config?: Partial<Config>;
    clock?: Clock;
    timers?: Timers;
    passwords?: PasswordHasher;
    lookup?: (host: string) => Promise<LookupAddress[]>;
  } = {},
): Promise<TestApp> {
  // An app whose clock a test moves must not sweep on its own: on the shared PostgreSQL database
  // its sweeper would expire other files' leases at its future time. Such tests sweep with
  // app.background.sweep() when they mean to.
  const quiet = opts.clock && opts.config?.sweepIntervalMs === undefined ? { sweepIntervalMs: 86_400_000 } : {};
  const config = testConfig(db, { ...quiet, ...opts.config });
  const runtime = await openProcessDeps(config, {
    logger: createLogger(config),
    clock: opts.clock,
    timers: opts.timers,
    passwords: opts.passwords,
    lookup: opts.lookup,
    checkTransactions: true,
  });
  const app = await buildApp(config, runtime, { closeRuntime: true });
  await app.ready();
  // `t.accounts` is deliberately not the app's own service: it is what the CLI is, another process
  // on the same storage, whose changes reach the app only through the storage's announcements (as
  // the two-instance tests need). Its credential cache never serves (nothing listens for it).
  const box = createSecretBox(runtime.secrets.encryptionKey, runtime.secrets.previousEncryptionKeys);
  const accounts = createAccountsModule({ config, runtime, box }).service;
  return { app, runtime, config, accounts, close: () => app.close() };
}

/** Sends a JSON request through the real Fastify stack. */
export function call(
  app: FastifyInstance,
  method: InjectOptions['method'],
  url: string,
  opts: { body?: unknown; headers?: Record<string, string>; token?: string } = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  return app.inject({
    method,
    url,
    headers,
    payload:
      opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
}
