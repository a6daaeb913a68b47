import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { coalesceHits, createPostgresStore } from '../../src/http/rate-limit-stores.js';
import { DATABASES, tempDir } from '../helpers/databases.js';

describe('coalesceHits', () => {
  it('gives concurrent hits each its own count from one increment per round', async () => {
    let stored = 0;
    const increments: number[] = [];
    const hit = coalesceHits(async (_scope, _window, n) => {
      increments.push(n);
      await new Promise((r) => setTimeout(r, 5));
      stored += n;
      return stored;
    });
    const counts = await Promise.all(Array.from({ length: 100 }, () => hit('user:a', 1)));
    expect([...counts].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(increments.length).toBeLessThan(100);
    expect(increments.reduce((s, n) => s + n, 0)).toBe(100);
    expect(await hit('user:a', 1)).toBe(101);
    expect(await hit('user:b', 1)).toBe(102); // another scope has its own round (same fake store here)
  });

  it('counts a hit of several requests (or a negative one taking them back) in the same round as others', async () => {
    let stored = 0;
    const hit = coalesceHits(async (_scope, _window, n) => {
      await new Promise((r) => setTimeout(r, 5));
      stored += n;
      return stored;
    });
    await hit('s', 1);
    const [one, five, back] = await Promise.all([hit('s', 1), hit('s', 1, 5), hit('s', 1, -5)]);
    expect([one, five, back]).toEqual([2, 7, 2]);
  });

  it('rejects every hit of a failed round and recovers on the next', async () => {
    let fail = true;
    const hit = coalesceHits(async (_s, _w, n) => {
      if (fail) throw new Error('down');
      return n;
    });
    await expect(Promise.all([hit('s', 1), hit('s', 1)])).rejects.toThrow('down');
    fail = false;
    expect(await hit('s', 1)).toBe(1);
  });
});

describe.each(DATABASES.filter((d) => d.name === 'postgres'))('PostgreSQL rate-limit store on $name', (database) => {
  let db: Db;
  beforeAll(async () => {
    db = connectDb({
      databaseUrl: database.databaseUrl,
      sqliteFile: path.join(tempDir(), 'x.sqlite'),
      sqliteSynchronous: 'normal',
    });
    await migrateToLatest(db);
  });
  afterAll(() => db.close());

  it('counts 500 concurrent hits of one scope exactly, each once', async () => {
    const store = createPostgresStore(db);
    const scope = `coalesce:${process.pid}:${Date.now()}`;
    const window = Math.floor(Date.now() / 60_000);
    const counts = await Promise.all(Array.from({ length: 500 }, () => store.hit(scope, window)));
    expect([...counts].sort((x, y) => x - y)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(await store.hit(scope, window)).toBe(501);
  });
});
