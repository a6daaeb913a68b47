import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSY_MESSAGE, failureMessage } from '../../src/cli/failure.js';
import { SQLITE_DRIVER } from '../../src/db/sqlite-driver.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/databases.js';
import { createUser } from '../helpers/factories.js';

/**
 * Another process on the same SQLite file (the CLI while the server runs) must wait for the
 * writer, not fail with "database is locked": a transaction that reads, then writes after the
 * other writer committed, cannot be upgraded and fails at once unless it began IMMEDIATE.
 */
describe('SQLite: writers of two processes take turns', () => {
  let t: TestApp;
  let file: string;

  beforeAll(async () => {
    const dataDir = tempDir();
    file = path.join(dataDir, 'taskhook.sqlite');
    t = await buildTestApp({ name: 'sqlite', databaseUrl: undefined }, { config: { dataDir } });
  });
  afterAll(() => t.close());

  it('a user delete waits for another connection holding a write transaction', async () => {
    const user = await createUser(t);
    // Another process takes the write lock, says so, and commits 400 ms later. It loads the driver
    // this Node.js uses (better-sqlite3 12 is built for Node.js 20 only, 13 for 22 and later).
    const script = `
      const db = require(process.argv[3])(process.argv[1]);
      db.pragma('busy_timeout = 5000');
      db.exec('begin immediate');
      db.prepare('update users set updated_at = updated_at where uuid = ?').run(process.argv[2]);
      process.stdout.write('held\\n');
      setTimeout(() => { db.exec('commit'); db.close(); }, 400);`;
    const other = spawn(process.execPath, ['-e', script, file, user.uuid, SQLITE_DRIVER], { cwd: ROOT });
    await new Promise<void>((resolve, reject) => {
      other.stdout.once('data', () => resolve());
      other.once('exit', (code) => reject(new Error(`the other writer exited (${code})`)));
    });
    const deleted = t.accounts.deleteByEmail(user.email);
    await expect(deleted).resolves.toMatchObject({ deleted: true });
  });
});

describe('the CLI says so when it gives up waiting', () => {
  it('names the lock and the busy timeout for SQLITE_BUSY, and passes other errors through', () => {
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    expect(failureMessage(busy)).toBe(BUSY_MESSAGE);
    expect(BUSY_MESSAGE).toMatch(/locked by another writer .* 5 s, the busy timeout; nothing was changed: try again/);
    expect(failureMessage(Object.assign(new Error('x'), { code: 'SQLITE_BUSY_SNAPSHOT' }))).toBe(BUSY_MESSAGE);
    expect(failureMessage(new Error('User not found'))).toBe('User not found');
  });
});
