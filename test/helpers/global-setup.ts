import { connectDb } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { deleteStoredSecrets } from '../../src/lib/secrets.js';
import { SQLITE_ONLY } from './databases.js';

/** Migrates the shared PostgreSQL test database once, before test files run in parallel. */
export default async function setup() {
  if (SQLITE_ONLY) {
    console.warn('\n*** TEST_DATABASES=sqlite: this run leaves the PostgreSQL tests out on purpose ***\n');
    return;
  }
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
  const db = connectDb({ databaseUrl: url, sqliteFile: ':memory:', sqliteSynchronous: 'normal' });
  try {
    await migrateToLatest(db);
    // Secrets an earlier version generated into this database: tests give their own (TEST_PG_SECRETS).
    await deleteStoredSecrets(db);
  } finally {
    await db.close();
  }
}
