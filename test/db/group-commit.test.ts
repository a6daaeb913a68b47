import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { isUniqueViolation } from '../../src/db/errors.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { tempDir } from '../helpers/databases.js';

class Refused extends Error {}

/** The settings rows whose key starts with `prefix`, as key → value. */
async function rowsWithPrefix(db: Db, prefix: string): Promise<Map<string, string>> {
  const rows = await db.kysely.selectFrom('settings').selectAll().where('key', 'like', `${prefix}%`).execute();
  return new Map(rows.map((r) => [r.key, r.value]));
}

describe('SQLite group commit', () => {
  let db: Db;
  let file: string;

  beforeAll(async () => {
    file = path.join(tempDir('taskhook-group-'), 'taskhook.sqlite');
    db = connectDb({ sqliteFile: file, sqliteSynchronous: 'full' });
    await migrateToLatest(db);
  });
  afterAll(() => db.close());

  it('commits every one of many concurrent transactions and returns each its own result', async () => {
    const prefix = 'many:';
    const count = 1200;
    let sawNeighbour = false;
    const results = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        db.transaction(async (trx) => {
          await trx
            .insertInto('settings')
            .values({ key: `${prefix}${i}`, value: String(i * 2) })
            .execute();
          // Calls that arrive together share one transaction: later ones see earlier writes.
          const seen = await trx.selectFrom('settings').select('key').where('key', 'like', `${prefix}%`).execute();
          if (seen.length > 1) sawNeighbour = true;
          return { index: i, value: i * 2 };
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: count }, (_, i) => ({ index: i, value: i * 2 })));
    expect(sawNeighbour).toBe(true);

    // Committed: another connection to the same file sees every row.
    const other = connectDb({ sqliteFile: file, sqliteSynchronous: 'full' });
    try {
      const rows = await rowsWithPrefix(other, prefix);
      expect(rows.size).toBe(count);
      for (let i = 0; i < count; i++) expect(rows.get(`${prefix}${i}`)).toBe(String(i * 2));
    } finally {
      await other.close();
    }
  });

  it('rolls back only the writes of a call that throws; its neighbours commit', async () => {
    const prefix = 'mixed:';
    const count = 300;
    const failing = new Set([0, 7, 150, 151, 299]);
    const outcomes = await Promise.allSettled(
      Array.from({ length: count }, (_, i) =>
        db.transaction(async (trx) => {
          await trx
            .insertInto('settings')
            .values({ key: `${prefix}${i}:a`, value: 'first' })
            .execute();
          await trx
            .insertInto('settings')
            .values({ key: `${prefix}${i}:b`, value: 'second' })
            .execute();
          if (failing.has(i)) throw new Refused(`call ${i} refused`);
          return i;
        }),
      ),
    );
    outcomes.forEach((outcome, i) => {
      if (failing.has(i)) {
        expect(outcome.status).toBe('rejected');
        const reason = (outcome as PromiseRejectedResult).reason;
        expect(reason).toBeInstanceOf(Refused);
        expect(reason.message).toBe(`call ${i} refused`);
      } else {
        expect(outcome).toEqual({ status: 'fulfilled', value: i });
      }
    });
    const rows = await rowsWithPrefix(db, prefix);
    expect(rows.size).toBe((count - failing.size) * 2);
    for (const i of failing) {
      expect(rows.has(`${prefix}${i}:a`)).toBe(false);
      expect(rows.has(`${prefix}${i}:b`)).toBe(false);
    }
  });

  it('isolates a database error (unique violation) to its own call', async () => {
    const prefix = 'dup:';
    await db.transaction((trx) =>
      trx
        .insertInto('settings')
        .values({ key: `${prefix}taken`, value: 'old' })
        .execute(),
    );
    const outcomes = await Promise.allSettled([
      db.transaction((trx) =>
        trx
          .insertInto('settings')
          .values({ key: `${prefix}before`, value: '1' })
          .execute(),
      ),
      db.transaction(async (trx) => {
        await trx
          .insertInto('settings')
          .values({ key: `${prefix}partial`, value: '2' })
          .execute();
        await trx
          .insertInto('settings')
          .values({ key: `${prefix}taken`, value: 'new' })
          .execute();
      }),
      db.transaction((trx) =>
        trx
          .insertInto('settings')
          .values({ key: `${prefix}after`, value: '3' })
          .execute(),
      ),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(isUniqueViolation((outcomes[1] as PromiseRejectedResult).reason)).toBe(true);
    expect(Object.fromEntries(await rowsWithPrefix(db, prefix))).toEqual({
      [`${prefix}taken`]: 'old',
      [`${prefix}before`]: '1',
      [`${prefix}after`]: '3',
    });
  });

  it('rolls back a lone call that throws', async () => {
    const prefix = 'lone:';
    await expect(
      db.transaction(async (trx) => {
        await trx
          .insertInto('settings')
          .values({ key: `${prefix}x`, value: 'x' })
          .execute();
        throw new Refused('alone');
      }),
    ).rejects.toBeInstanceOf(Refused);
    expect((await rowsWithPrefix(db, prefix)).size).toBe(0);
    expect(await db.transaction(async () => 'still works')).toBe('still works');
  });

  it('commits what is still queued when the database is closed', async () => {
    const dir = tempDir('taskhook-group-');
    const own = connectDb({ sqliteFile: path.join(dir, 'taskhook.sqlite'), sqliteSynchronous: 'full' });
    await migrateToLatest(own);
    const pending = Array.from({ length: 50 }, (_, i) =>
      own.transaction((trx) =>
        trx
          .insertInto('settings')
          .values({ key: `close:${i}`, value: 'v' })
          .execute(),
      ),
    );
    await own.close();
    await Promise.all(pending);
    const reopened = connectDb({ sqliteFile: path.join(dir, 'taskhook.sqlite'), sqliteSynchronous: 'full' });
    try {
      expect((await rowsWithPrefix(reopened, 'close:')).size).toBe(50);
    } finally {
      await reopened.close();
    }
  });
});
