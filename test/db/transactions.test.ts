import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { afterCommit, lockRows, RootHandleInTransactionError } from '../../src/db/transactions.js';
import { agentsRepo } from '../../src/modules/agents/agents-repo.js';
import { DATABASES, tempDir } from '../helpers/databases.js';

class Refused extends Error {}

describe.each(DATABASES)('transactions on $name', (database) => {
  let db: Db;

  beforeAll(async () => {
    db = connectDb({
      databaseUrl: database.databaseUrl,
      sqliteFile: `${tempDir('taskhook-tx-')}/taskhook.sqlite`,
      sqliteSynchronous: 'normal',
      checkTransactions: true,
    });
    await migrateToLatest(db);
  });
  afterAll(() => db.close());

  const key = (name: string) => `tx-test:${name}:${Math.random().toString(36).slice(2)}`;

  it('runs after-commit hooks once the write is committed, before the caller continues', async () => {
    const k = key('commit');
    const seen: Array<string | undefined> = [];
    await db.transaction(async (trx) => {
      await trx.insertInto('settings').values({ key: k, value: 'v' }).execute();
      afterCommit(trx, () => seen.push('hook'));
      expect(seen).toEqual([]);
    });
    expect(seen).toEqual(['hook']);
    const row = await db.kysely.selectFrom('settings').select('value').where('key', '=', k).executeTakeFirst();
    expect(row?.value).toBe('v');
  });

  it('drops the hooks of a transaction that rolled back, and keeps its neighbours’ hooks', async () => {
    const ran: string[] = [];
    const results = await Promise.allSettled(
      ['a', 'b', 'c'].map((name) =>
        db.transaction(async (trx) => {
          await trx
            .insertInto('settings')
            .values({ key: key(name), value: name })
            .execute();
          afterCommit(trx, () => ran.push(name));
          if (name === 'b') throw new Refused();
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(ran.sort()).toEqual(['a', 'c']);
  });

  it('refuses afterCommit outside a transaction', () => {
    expect(() => afterCommit(db.kysely, () => undefined)).toThrow(/afterCommit/);
  });

  it('a repository called with the root handle inside a transaction fails at once instead of hanging', async () => {
    const attempt = db.transaction(async () => agentsRepo.findOwned(db.kysely, 'nobody', 'nothing'));
    await expect(attempt).rejects.toBeInstanceOf(RootHandleInTransactionError);
    // A transaction started inside another is the same mistake.
    const nested = db.transaction(async () => db.transaction(async () => 1));
    await expect(nested).rejects.toBeInstanceOf(RootHandleInTransactionError);
    // Outside transactions the root handle works as before.
    await expect(agentsRepo.findOwned(db.kysely, 'nobody', 'nothing')).resolves.toBeUndefined();
  });

  it('takes row locks on PostgreSQL only', async () => {
    const query = lockRows(db.kysely, db.kysely.selectFrom('settings').selectAll(), { skipLocked: true });
    const text = query.compile().sql;
    if (db.dialect === 'postgres') expect(text).toMatch(/for update skip locked$/);
    else expect(text).not.toMatch(/for update/);
    // And the locked read runs inside a transaction on both.
    await db.transaction((trx) => lockRows(trx, trx.selectFrom('settings').selectAll().limit(1)).execute());
  });
});
