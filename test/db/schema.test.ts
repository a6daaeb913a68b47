import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { columnTypes } from '../../src/db/migrations/types.js';
import { POSTGRES_URL, tempDir } from '../helpers/databases.js';

const KYSELY_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

interface ColumnShape {
  name: string;
  type: string;
  nullable: boolean;
  hasDefault: boolean;
  /** SQLite only: the column is the table's single-column primary key. */
  primaryKey?: boolean;
}

/** Every table of ours (Kysely's migration tables left out), columns sorted by name. */
async function schemaOf(db: Db): Promise<Map<string, ColumnShape[]>> {
  const tables = await db.kysely.introspection.getTables();
  const out = new Map<string, ColumnShape[]>();
  for (const table of tables) {
    if (KYSELY_TABLES.has(table.name) || table.isView) continue;
    if (db.dialect === 'postgres' && table.schema !== 'public') continue;
    const columns = table.columns
      .map(
        (c): ColumnShape => ({
          name: c.name,
          type: c.dataType.toLowerCase(),
          nullable: c.isNullable,
          hasDefault: c.hasDefaultValue,
        }),
      )
      .sort((a, b) => a.name.localeCompare(b.name));
    if (db.dialect === 'sqlite') {
      const keys = await sql<{ name: string }>`select name from pragma_table_info(${table.name}) where pk > 0`
        .execute(db.kysely)
        .then((r) => r.rows.map((row) => row.name));
      for (const column of columns) column.primaryKey = keys.length === 1 && keys[0] === column.name ? true : undefined;
    }
    out.set(table.name, columns);
  }
  return out;
}

const SAME_TYPE: Record<string, string> = {
  text: 'text',
  varchar: 'text',
  'character varying': 'text',
  integer: 'integer',
  int: 'integer',
  int4: 'integer',
  int8: 'integer',
  bigint: 'integer',
};

/** The logical type of a column, given its PostgreSQL and SQLite types (see migrations/types.ts). */
function logicalType(pgType: string, sqliteType: string): [string, string] {
  const pgTypes = columnTypes('postgres');
  const sqliteTypes = columnTypes('sqlite');
  const pg = pgType === 'bool' ? 'boolean' : pgType;
  if (pg === pgTypes.bool) return ['bool', sqliteType === sqliteTypes.bool ? 'bool' : sqliteType];
  if (pg === pgTypes.json) return ['json', sqliteType === sqliteTypes.json ? 'json' : sqliteType];
  return [SAME_TYPE[pg] ?? pg, SAME_TYPE[sqliteType] ?? sqliteType];
}

function openSqlite(): Db {
  return connectDb({
    sqliteFile: path.join(tempDir('taskhook-schema-'), 'taskhook.sqlite'),
    sqliteSynchronous: 'normal',
  });
}

describe('migrations on SQLite', () => {
  it('apply every migration once; running them again is a no-op', async () => {
    const db = openSqlite();
    try {
      const first = await migrateToLatest(db);
      expect(first).toContain('001-foundation');
      expect(first).toEqual([...first].sort());
      const before = await schemaOf(db);
      expect(await migrateToLatest(db)).toEqual([]);
      expect(await schemaOf(db)).toEqual(before);
    } finally {
      await db.close();
    }
  });
});

// SQLite accepts NULL in a text primary key unless it is declared NOT NULL; every migration does.
it('SQLite refuses a NULL primary key, as PostgreSQL does', async () => {
  const db = openSqlite();
  try {
    await migrateToLatest(db);
    await expect(
      db.kysely
        .insertInto('settings')
        .values({ key: null as unknown as string, value: 'x' })
        .execute(),
    ).rejects.toThrow(/NOT NULL/);
  } finally {
    await db.close();
  }
});

describe.runIf(POSTGRES_URL)('migrations on PostgreSQL', () => {
  const name = `taskhook_schema_${randomBytes(6).toString('hex')}`;
  // Built lazily: this body runs while the file is collected, also when the block is skipped.
  const freshUrl = () => {
    const url = new URL(POSTGRES_URL as string);
    url.pathname = `/${name}`;
    return url.toString();
  };
  let admin: Db;
  const open: Db[] = [];

  function openFresh(): Db {
    const db = connectDb({ databaseUrl: freshUrl(), sqliteFile: ':memory:', sqliteSynchronous: 'normal' });
    open.push(db);
    return db;
  }

  beforeAll(async () => {
    admin = connectDb({ databaseUrl: POSTGRES_URL, sqliteFile: ':memory:', sqliteSynchronous: 'normal' });
    await sql.raw(`create database ${name}`).execute(admin.kysely);
  });
  afterAll(async () => {
    await Promise.all(open.map((db) => db.close()));
    await sql.raw(`drop database if exists ${name} with (force)`).execute(admin.kysely);
    await admin.close();
  });

  it('run from several connections at once on a fresh database: all succeed, each migration applied once', async () => {
    const runners = [openFresh(), openFresh(), openFresh(), openFresh()];
    const applied = await Promise.all(runners.map((db) => migrateToLatest(db)));
    const all = applied.flat();
    expect(all).toContain('001-foundation');
    expect(new Set(all).size).toBe(all.length);
    const recorded = await sql<{ name: string }>`select name from kysely_migration order by name`
      .execute((runners[0] as Db).kysely)
      .then((r) => r.rows.map((row) => row.name));
    expect(recorded).toEqual([...all].sort());
  });

  it('running them again is a no-op', async () => {
    const db = openFresh();
    const before = await schemaOf(db);
    expect(await migrateToLatest(db)).toEqual([]);
    expect(await schemaOf(db)).toEqual(before);
  });

  it('give the same tables and columns as SQLite: names, nullability, defaults and logical types', async () => {
    const sqlite = openSqlite();
    try {
      const sqliteApplied = await migrateToLatest(sqlite);
      const pgApplied = await sql<{ name: string }>`select name from kysely_migration order by name`
        .execute(openFresh().kysely)
        .then((r) => r.rows.map((row) => row.name));
      expect(sqliteApplied).toEqual(pgApplied);

      const pg = await schemaOf(openFresh());
      const lite = await schemaOf(sqlite);
      expect([...lite.keys()].sort()).toEqual([...pg.keys()].sort());
      expect(pg.has('users')).toBe(true);
      for (const [table, pgColumns] of pg) {
        const liteColumns = lite.get(table) ?? [];
        expect(
          liteColumns.map((c) => c.name),
          table,
        ).toEqual(pgColumns.map((c) => c.name));
        pgColumns.forEach((pgColumn, i) => {
          const liteColumn = liteColumns[i] as ColumnShape;
          const where = `${table}.${pgColumn.name}`;
          const [pgLogical, liteLogical] = logicalType(pgColumn.type, liteColumn.type);
          expect(liteLogical, `${where}: ${pgColumn.type} vs ${liteColumn.type}`).toBe(pgLogical);
          expect(liteColumn.nullable, `${where} nullable`).toBe(pgColumn.nullable);
          expect(liteColumn.hasDefault, `${where} default`).toBe(pgColumn.hasDefault);
        });
      }
    } finally {
      await sqlite.close();
    }
  });
});
