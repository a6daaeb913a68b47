import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectDb } from '../../src/db/connect.js';
import SqliteDatabase from '../../src/db/sqlite-driver.js';
import { tempDir } from '../helpers/databases.js';

/** The files this process has open whose names SQLite gives its temporaries (`etilqs_…`). */
function openTemporaries(): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.includes('etilqs_')) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

// PostgreSQL keeps its temporaries on the database server: this is the embedded mode's concern.
// A container's root filesystem may be read-only, and the data directory the one writable place.
describe.runIf(process.platform === 'linux')('SQLite temporary files', () => {
  it('go to the data directory once the database is connected, not to /var/tmp or /tmp', async () => {
    const dataDir = tempDir('taskhook-sqlite-tmp-');
    const file = path.join(dataDir, 'taskhook.sqlite');
    const db = connectDb({ sqliteFile: file, sqliteSynchronous: 'normal' });
    // A sort that outgrows a tiny page cache spills to temporary files while its rows are read.
    const native = new SqliteDatabase(file);
    try {
      native.exec('create table spill (a integer, b text)');
      const insert = native.prepare('insert into spill values (?, ?)');
      native.transaction(() => {
        for (let i = 0; i < 50_000; i++) insert.run(i, `row ${i} `.repeat(10));
      })();
      native.pragma('cache_size = 10');
      let seen: string[] = [];
      for (const _row of native.prepare('select a from spill order by b desc, a desc').iterate()) {
        seen = openTemporaries();
        break;
      }
      expect(seen.length).toBeGreaterThan(0);
      for (const target of seen) expect(path.dirname(target)).toBe(dataDir);
    } finally {
      native.close();
      await db.close();
    }
  });
});
