import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { connectDb, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { deleteStoredSecrets, resolveSecrets } from '../../src/lib/secrets.js';
import { buildTestApp } from '../helpers/app.js';
import {
  DATABASES,
  ownDatabase,
  POSTGRES_URL,
  TEST_PG_SECRETS,
  type TestDatabase,
  tempDir,
} from '../helpers/databases.js';
import { ROOT } from '../helpers/server-process.js';

/** Resolves the generated secrets in a separate process (as a server or CLI starting would). */
function resolveInChild(dataDir: string): Promise<{ jwtSecret: string; encryptionKey: string }> {
  const script = `
    import { loadConfig } from './src/config.ts';
    import { resolveSecrets } from './src/lib/secrets.ts';
    const config = loadConfig({ TASKHOOK_DATA_DIR: process.argv[1] });
    const secrets = await resolveSecrets(config, { dialect: 'sqlite' });
    process.stdout.write(JSON.stringify(secrets));`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script, dataDir],
      { cwd: ROOT, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

describe('generated secrets in embedded mode', () => {
  it('are the same for processes starting together on a new data dir, and kept in a 0600 file', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const results = await Promise.all(Array.from({ length: 4 }, () => resolveInChild(dataDir)));
    for (const r of results) expect(r).toEqual(results[0]);
    expect(results[0]?.jwtSecret.length).toBeGreaterThanOrEqual(32);
    expect(results[0]?.encryptionKey).not.toBe(results[0]?.jwtSecret);
    expect(statSync(path.join(dataDir, 'secrets.json')).mode & 0o777).toBe(0o600);
    expect(await resolveInChild(dataDir)).toEqual(results[0]);
  }, 60_000);
});

const JWT = 'operator-jwt-secret-of-at-least-32-characters';
const KEY = 'operator-encryption-key-of-at-least-32-chars';

/** Every row of every table of a database as text: what a reader of the database alone sees. */
async function dumpDatabase(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      "select table_name as name from information_schema.tables where table_schema = 'public'",
    );
    const parts: string[] = [];
    for (const { name } of tables) {
      const { rows } = await client.query(`select t::text as row from "${name}" t`);
      parts.push(...rows.map((r) => String(r.row)));
    }
    return parts.join('\n');
  } finally {
    await client.end();
  }
}

describe.runIf(POSTGRES_URL)('secrets in PostgreSQL mode', () => {
  const postgres = DATABASES.find((d) => d.name === 'postgres') as TestDatabase;
  let own: Awaited<ReturnType<typeof ownDatabase>>;
  let db: Db;
  const config = (env: Record<string, string>) =>
    loadConfig({ TASKHOOK_DATA_DIR: tempDir(), DATABASE_URL: own.database.databaseUrl as string, ...env });
  const storedRows = () => db.kysely.selectFrom('settings').select(['key', 'value']).execute();
  const plantOldRows = (jwt: string, key: string) =>
    db.kysely
      .insertInto('settings')
      .values([
        { key: 'jwt_secret', value: jwt },
        { key: 'encryption_key', value: key },
      ])
      .execute();

  beforeAll(async () => {
    own = await ownDatabase(postgres);
    db = connectDb({ databaseUrl: own.database.databaseUrl, sqliteFile: ':memory:', sqliteSynchronous: 'normal' });
    await migrateToLatest(db);
  });
  afterAll(async () => {
    await db.close();
    await own.drop();
  });
  beforeEach(() => deleteStoredSecrets(db));

  it('are required from the environment, never generated into the database', async () => {
    await expect(resolveSecrets(config({}), db)).rejects.toThrow(
      /TASKHOOK_JWT_SECRET \(or TASKHOOK_JWT_SECRET_FILE\) is required.*taskhook secret generate/s,
    );
    await expect(resolveSecrets(config({ TASKHOOK_JWT_SECRET: JWT }), db)).rejects.toThrow(
      /TASKHOOK_ENCRYPTION_KEY \(or TASKHOOK_ENCRYPTION_KEY_FILE\) is required/,
    );
    expect(await storedRows()).toEqual([]);
    const secrets = await resolveSecrets(config({ TASKHOOK_JWT_SECRET: JWT, TASKHOOK_ENCRYPTION_KEY: KEY }), db);
    expect(secrets).toEqual({ jwtSecret: JWT, encryptionKey: KEY, previousEncryptionKeys: [] });
    expect(await storedRows()).toEqual([]);
  });

  it('are read from the files that the *_FILE variables name, a trailing newline ignored', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'jwt'), `${JWT}\n`);
    writeFileSync(path.join(dir, 'key'), KEY);
    writeFileSync(path.join(dir, 'short'), 'too short\n');
    const files = {
      TASKHOOK_JWT_SECRET_FILE: path.join(dir, 'jwt'),
      TASKHOOK_ENCRYPTION_KEY_FILE: path.join(dir, 'key'),
    };
    expect(await resolveSecrets(config(files), db)).toMatchObject({ jwtSecret: JWT, encryptionKey: KEY });
    await expect(
      resolveSecrets(config({ ...files, TASKHOOK_JWT_SECRET_FILE: path.join(dir, 'short') }), db),
    ).rejects.toThrow(/TASKHOOK_JWT_SECRET_FILE must hold at least 32 characters/);
    await expect(resolveSecrets(config({ ...files, TASKHOOK_JWT_SECRET: JWT }), db)).rejects.toThrow(
      /Set TASKHOOK_JWT_SECRET or TASKHOOK_JWT_SECRET_FILE, not both/,
    );
  });

  it('left in the database by an earlier version: refused until moved out, deleted once the environment holds them', async () => {
    await plantOldRows(JWT, KEY);
    await expect(resolveSecrets(config({}), db)).rejects.toThrow(/still holds TASKHOOK_JWT_SECRET.*secret export/s);
    await expect(
      resolveSecrets(config({ TASKHOOK_JWT_SECRET: JWT, TASKHOOK_ENCRYPTION_KEY: `${KEY}-other` }), db),
    ).rejects.toThrow(/still holds TASKHOOK_ENCRYPTION_KEY .*differs/s);
    expect(await storedRows()).toHaveLength(2);
    await resolveSecrets(config({ TASKHOOK_JWT_SECRET: JWT, TASKHOOK_ENCRYPTION_KEY: KEY }), db);
    expect(await storedRows()).toEqual([]);
    // An old key kept as a previous key after a rotation counts as moved out too.
    await plantOldRows(JWT, KEY);
    const rotated = {
      TASKHOOK_JWT_SECRET: JWT,
      TASKHOOK_ENCRYPTION_KEY: `${KEY}-new`,
      TASKHOOK_ENCRYPTION_KEY_PREVIOUS: KEY,
    };
    expect((await resolveSecrets(config(rotated), db)).previousEncryptionKeys).toEqual([KEY]);
    expect(await storedRows()).toEqual([]);
  });

  it('cannot be read from the database by anyone who reads the database alone', async () => {
    const t = await buildTestApp(own.database);
    try {
      const email = `${randomUUID()}@example.com`;
      const user = await t.accounts.createUser({
        email,
        password: 'a password 1',
        verified: true,
        agentsEnabled: true,
      });
      expect((await t.accounts.getSigningSecret(user.uuid)).secret).toMatch(/^whsec_/);
      const dump = await dumpDatabase(own.database.databaseUrl as string);
      expect(dump).toContain(email);
      expect(dump).not.toContain(TEST_PG_SECRETS.jwtSecret);
      expect(dump).not.toContain(TEST_PG_SECRETS.encryptionKey);
    } finally {
      await t.close();
    }
  });
});

describe('the SQLite database file', () => {
  it('and its WAL and shared-memory files are created 0600 whatever the umask', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const script = `
      import { connectDb } from './src/db/connect.ts';
      import { migrateToLatest } from './src/db/migrate.ts';
      process.umask(0);
      const db = connectDb({ sqliteFile: process.argv[1] + '/taskhook.sqlite', sqliteSynchronous: 'normal' });
      await migrateToLatest(db);
      const fs = await import('node:fs');
      const modes = ['', '-wal', '-shm'].map((s) => fs.statSync(process.argv[1] + '/taskhook.sqlite' + s).mode & 0o777);
      await db.close();
      process.stdout.write(JSON.stringify(modes));`;
    const modes = await new Promise<number[]>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script, dataDir],
        { cwd: ROOT, timeout: 30_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout))),
      );
    });
    expect(modes).toEqual([0o600, 0o600, 0o600]);
  }, 60_000);
});
