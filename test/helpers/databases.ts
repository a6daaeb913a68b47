import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  /** A PostgreSQL URL, or undefined for a fresh SQLite file in its own data dir. */
  databaseUrl: string | undefined;
}

const pgUrl = process.env.TEST_DATABASE_URL;

if (!pgUrl && process.env.CI) {
  throw new Error('TEST_DATABASE_URL is not set: in CI every storage test must also run on PostgreSQL');
}
if (!pgUrl) {
  console.warn('\n*** TEST_DATABASE_URL is not set: PostgreSQL tests are NOT running (CI fails in this case) ***\n');
}

/** Every storage and route test runs once per entry: SQLite always, PostgreSQL when configured. */
export const DATABASES: TestDatabase[] = [
  { name: 'sqlite', databaseUrl: undefined },
  ...(pgUrl ? [{ name: 'postgres' as const, databaseUrl: pgUrl }] : []),
];

export const POSTGRES_URL = pgUrl;

/** A fresh temporary directory. */
export function tempDir(prefix = 'taskhook-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}
