import path from 'node:path';
import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { prepareQuery, registerNamedStatement, statementName } from '../../src/db/prepared.js';
import SqliteDatabase from '../../src/db/sqlite-driver.js';
import { DATABASES, tempDir } from '../helpers/databases.js';

const settingByKey = prepareQuery(1, (ex, key: string) => ex.selectFrom('settings').selectAll().where('key', '=', key));

function open(database: (typeof DATABASES)[number], preparedStatements = true): Db {
  return connectDb({
    databaseUrl: database.databaseUrl,
    sqliteFile: path.join(tempDir('taskhook-prepared-'), 'taskhook.sqlite'),
    sqliteSynchronous: 'normal',
    poolSize: 2,
    pg: { preparedStatements },
  });
}

describe.each(DATABASES)('prepared hot queries on $name', (database) => {
  let db: Db;
  beforeAll(async () => {
    db = open(database);
    await migrateToLatest(db);
  });
  afterAll(() => db.close());

  it('return the rows of their arguments, call after call', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => `prepared-${process.pid}-${Date.now()}-${i}`);
    await db.transaction((trx) =>
      trx
        .insertInto('settings')
        .values(keys.map((key, i) => ({ key, value: String(i) })))
        .execute(),
    );
    const rows = await Promise.all(keys.map((key) => settingByKey(db.kysely, key)));
    expect(rows.map((r) => r[0]?.value)).toEqual(keys.map((_, i) => String(i)));
    expect(await settingByKey(db.kysely, 'no-such-key')).toEqual([]);
  });

  it('outside a transaction read only committed rows (SQLite: on the read connection)', async () => {
    const key = `uncommitted-${process.pid}-${Date.now()}`;
    const seenInside = await db.transaction(async (trx) => {
      await trx.insertInto('settings').values({ key, value: 'v' }).execute();
      const inTrx = await settingByKey(trx, key);
      const outside = await settingByKey(db.kysely, key);
      return { inTrx: inTrx.length, outside: outside.length };
    });
    expect(seenInside).toEqual({ inTrx: 1, outside: 0 });
    expect((await settingByKey(db.kysely, key))[0]?.value).toBe('v');
  });

  it.runIf(database.name === 'postgres')('are prepared once per connection under a name', async () => {
    const names = await db.kysely.transaction().execute(async (trx) => {
      await settingByKey(trx, 'x');
      await settingByKey(trx, 'y');
      const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(trx);
      return rows.map((r) => r.name);
    });
    expect(names.filter((n) => n.startsWith('taskhook_')).length).toBeGreaterThanOrEqual(1);
  });

  it.runIf(database.name === 'postgres')('survive a column added by another instance (re-prepared)', async () => {
    const table = `prepared_probe_${process.pid}_${Date.now()}`;
    await sql.raw(`create table ${table} (id int primary key, a text)`).execute(db.kysely);
    try {
      await sql.raw(`insert into ${table} values (1, 'one')`).execute(db.kysely);
      const text = `select * from ${table} where id = $1`;
      registerNamedStatement(text);
      expect(statementName(text)).toMatch(/^taskhook_/);
      const run = () => db.kysely.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, [1]));
      // Both pooled connections prepare it.
      await Promise.all([run(), run()]);
      await sql.raw(`alter table ${table} add column b text default 'two'`).execute(db.kysely);
      for (let i = 0; i < 4; i++) expect((await run()).rows[0]).toEqual({ id: 1, a: 'one', b: 'two' });
    } finally {
      await sql.raw(`drop table ${table}`).execute(db.kysely);
    }
  });

  // The SQLite side of the case above: a cached statement's rows are named by the columns as
  // they are after another connection (the CLI's migrate, another process) changed the table.
  it.runIf(database.name === 'sqlite')('name the columns a schema change by another connection made', async () => {
    const table = `rows_probe_${process.pid}_${Date.now()}`;
    const file = (
      await sql<{ file: string }>`select file from pragma_database_list where name = 'main'`.execute(db.kysely)
    ).rows[0]?.file;
    const other = new SqliteDatabase(file as string);
    try {
      other.exec(`create table ${table} (id integer primary key, a text); insert into ${table} values (1, 'one')`);
      const text = `select * from ${table} where id = ?`;
      const inTrx = () => db.transaction(async (trx) => (await trx.executeQuery(CompiledQuery.raw(text, [1]))).rows[0]);
      const outside = async () => (await sql.raw(`select * from ${table} where id = 1`).execute(db.kysely)).rows[0];
      expect(await inTrx()).toEqual({ id: 1, a: 'one' });
      expect(await outside()).toEqual({ id: 1, a: 'one' });
      // A column more: caught on the first read.
      other.exec(`alter table ${table} add column b text default 'two'`);
      expect(await inTrx()).toEqual({ id: 1, a: 'one', b: 'two' });
      expect(await outside()).toEqual({ id: 1, a: 'one', b: 'two' });
      // As many columns, one renamed: caught when the schema version is next looked at (every
      // 100 ms; a generous wait, as the CI machine once took longer than 3 s under load).
      other.exec(`alter table ${table} rename column a to c`);
      const wait = { timeout: 15_000, interval: 50 };
      await vi.waitFor(async () => expect(await inTrx()).toEqual({ id: 1, c: 'one', b: 'two' }), wait);
      await vi.waitFor(async () => expect(await outside()).toEqual({ id: 1, c: 'one', b: 'two' }), wait);
    } finally {
      other.exec(`drop table if exists ${table}`);
      other.close();
    }
  });

  // SQLite's statements read rows as arrays and build the objects themselves (connect.ts).
  it('give rows as objects keyed by column in column order, a repeated name keeping the last value', async () => {
    const query = sql<
      Record<string, unknown>
    >`select 1 as "a", 'two' as "b", null as "c", 3 as "a", 'x"y' as "q""uote"`;
    const inTrx = await db.transaction((trx) => query.execute(trx));
    const outside = await query.execute(db.kysely);
    for (const { rows } of [inTrx, outside]) {
      expect(rows).toEqual([{ a: 3, b: 'two', c: null, 'q"uote': 'x"y' }]);
      expect(Object.keys(rows[0] ?? {})).toEqual(['a', 'b', 'c', 'q"uote']);
    }
    const key = `rows-${process.pid}-${Date.now()}`;
    await db.transaction((trx) => trx.insertInto('settings').values({ key, value: 'v' }).execute());
    expect(await settingByKey(db.kysely, key)).toEqual([{ key, value: 'v' }]);
    expect(await db.kysely.selectFrom('settings').select('value').where('key', '=', `${key}-none`).execute()).toEqual(
      [],
    );
  });
});

describe.each(DATABASES.filter((d) => d.name === 'postgres'))('prepared statements turned off on $name', (database) => {
  it('sends hot queries unnamed', async () => {
    const db = open(database, false);
    try {
      const names = await db.kysely.transaction().execute(async (trx) => {
        await settingByKey(trx, 'x');
        const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(trx);
        return rows.map((r) => r.name);
      });
      expect(names).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
