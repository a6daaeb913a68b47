import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  /** A PostgreSQL URL, or undefined for a fresh SQLite file in its own data dir. */
  databaseUrl: string | undefined;
}

/**
 * `TEST_DATABASES=sqlite` leaves PostgreSQL out on purpose, and says so once (global-setup.ts):
 * CI's second Node.js pass, after the first ran every test on both databases. Unset: both.
 */
const only = process.env.TEST_DATABASES;
if (only !== undefined && only !== '' && only !== 'sqlite') {
  throw new Error(`TEST_DATABASES must be unset or "sqlite", not ${JSON.stringify(only)}`);
}
export const SQLITE_ONLY = only === 'sqlite';

const pgUrl = SQLITE_ONLY ? undefined : process.env.TEST_DATABASE_URL;

if (!pgUrl && process.env.CI && !SQLITE_ONLY) {
  throw new Error('TEST_DATABASE_URL is not set: in CI every storage test must also run on PostgreSQL');
}
if (!pgUrl && !SQLITE_ONLY) {
  console.warn('\n*** TEST_DATABASE_URL is not set: PostgreSQL tests are NOT running (CI fails in this case) ***\n');
}

/** Every storage and route test runs once per entry: SQLite always, PostgreSQL when configured. */
export const DATABASES: TestDatabase[] = [
  { name: 'sqlite', databaseUrl: undefined },
  ...(pgUrl ? [{ name: 'postgres' as const, databaseUrl: pgUrl }] : []),
];

export const POSTGRES_URL = pgUrl;

/**
 * For files that need PostgreSQL itself (several instances on one database): use it as
 * `describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)`. It holds its one entry even without
 * PostgreSQL, so the file still registers a (skipped) suite: vitest fails a file that has none.
 */
export const POSTGRES_ONLY: TestDatabase[] = [{ name: 'postgres', databaseUrl: pgUrl }];

/**
 * The secrets every PostgreSQL test app and server is given: PostgreSQL mode takes them only from
 * the environment, and every app on the shared test database must agree on them.
 */
export const TEST_PG_SECRETS = {
  jwtSecret: 'test-jwt-secret-for-the-shared-postgres-database',
  encryptionKey: 'test-encryption-key-for-the-shared-postgres-database',
};

/** A fresh temporary directory. */
export function tempDir(prefix = 'taskhook-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/**
 * Storage of its own for a test file whose apps run background work over all of a database (the
 * callback sender, the push dispatcher, housekeeping, sweeps on a moved clock). On PostgreSQL every
 * app of every test file shares the test database, and each app's background work acts on
 * everything it finds there with its own configuration: a fresh database keeps a file's work to its
 * own apps. SQLite apps have their own file already.
 */
export async function ownDatabase(database: TestDatabase): Promise<{ database: TestDatabase; drop(): Promise<void> }> {
  if (!database.databaseUrl) return { database, drop: async () => undefined };
  const name = `taskhook_cb_${randomUUID().replaceAll('-', '')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: database.databaseUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(database.databaseUrl);
  url.pathname = `/${name}`;
  return {
    database: { name: database.name, databaseUrl: url.toString() },
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
