import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRows, insertText, MAX_PARAMETERS } from '../../src/db/batches.js';
import { connectDb, type Db } from '../../src/db/connect.js';
import { DATABASES, ownDatabase, tempDir } from '../helpers/databases.js';

describe.each(DATABASES)('insertRows on $name', (database) => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const own = await ownDatabase(database);
    drop = own.drop;
    db = connectDb({
      databaseUrl: own.database.databaseUrl,
      sqliteFile: path.join(tempDir('taskhook-insert-rows-'), 'taskhook.sqlite'),
      sqliteSynchronous: 'normal',
      poolSize: 2,
    });
    await sql`create table rows_test (id integer primary key, name text not null, note text)`.execute(db.kysely);
  });
  afterAll(async () => {
    await db.close();
    await drop();
  });

  it('writes every row with its own values, across as many statements as the parameters need', async () => {
    // Three columns: a statement carries at most MAX_PARAMETERS / 3 rows, so this takes three.
    const count = Math.floor(MAX_PARAMETERS / 3) * 2 + 7;
    const values: unknown[] = [];
    for (let i = 0; i < count; i++) values.push(i, `name ${i}`, i % 2 ? null : `it's "${i}"`);
    const returned = await db.transaction((trx) =>
      insertRows<{ id: number }>(trx, 'rows_test', ['id', 'name', 'note'], values, 'returning "id"'),
    );
    expect(returned.map((r) => Number(r.id))).toEqual(Array.from({ length: count }, (_, i) => i));
    const rows = await db.kysely
      .selectFrom('rows_test' as never)
      .select(['id', 'name', 'note'] as never)
      .orderBy('id' as never)
      .execute();
    expect(rows).toHaveLength(count);
    expect(rows[count - 1]).toEqual({ id: count - 1, name: `name ${count - 1}`, note: `it's "${count - 1}"` });
    expect(rows[1]).toEqual({ id: 1, name: 'name 1', note: null });
  });

  it('runs a conflict clause given as its suffix, and rolls back with its transaction', async () => {
    await db.transaction((trx) => insertRows(trx, 'rows_test', ['id', 'name'], [-1, 'first']));
    const suffix = 'on conflict ("id") do update set "name" = excluded."name"';
    await db.transaction((trx) => insertRows(trx, 'rows_test', ['id', 'name'], [-1, 'second', -2, 'new'], suffix));
    await expect(
      db.transaction(async (trx) => {
        await insertRows(trx, 'rows_test', ['id', 'name'], [-3, 'gone']);
        await insertRows(trx, 'rows_test', ['id', 'name'], [-2, 'duplicate']);
      }),
    ).rejects.toMatchObject({ code: database.name === 'postgres' ? '23505' : 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    const rows = await sql<{
      id: number;
      name: string;
    }>`select id, name from rows_test where id < 0 order by id`.execute(db.kysely);
    expect(rows.rows.map((r) => [Number(r.id), r.name])).toEqual([
      [-2, 'new'],
      [-1, 'second'],
    ]);
  });
});

describe('insertText', () => {
  it('numbers PostgreSQL placeholders row after row and uses ? on SQLite', () => {
    expect(insertText(true, 't', ['a', 'b'], 2)).toBe('insert into "t" ("a", "b") values ($1, $2), ($3, $4)');
    expect(insertText(false, 't', ['a', 'b'], 2, 'returning "a"')).toBe(
      'insert into "t" ("a", "b") values (?, ?), (?, ?) returning "a"',
    );
  });
});
