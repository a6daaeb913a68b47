import { connectDb } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/** Migrates the shared PostgreSQL test database once, before test files run in parallel. */
export default async function setup() {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
  const db = connectDb({ databaseUrl: url, sqliteFile: ':memory:', sqliteSynchronous: 'normal' });
  try {
    await migrateToLatest(db);
  } finally {
    await db.close();
  }
}
