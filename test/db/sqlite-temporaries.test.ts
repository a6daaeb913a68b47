import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectDb } from '../../src/db/connect.js';
import SqliteDatabase from '../../src/db/sqlite-driver.js';
import { tempDir } from '../helpers/databases.js';

/** The files this process has open, by descriptor (sockets, pipes and the like left out). */
function openFiles(): Map<string, string> {
  const out = new Map<string, string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith('/')) out.set(fd, target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/**
 * The files opened since `before` that are already unlinked: SQLite's temporaries. Their names
 * changed between SQLite versions (`etilqs_…` in 3.53, `#<n>` in 3.54), so they are found by being
 * new and deleted, not by name.
 */
function newTemporaries(before: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [fd, target] of openFiles()) {
    if (before.get(fd) === target || !target.endsWith(' (deleted)')) continue;
    out.push(target.slice(0, -' (deleted)'.length));
  }
  return out;
}

// PostgreSQL keeps its temporaries on the database server: this is the embedded mode's concern.
// A container's root filesystem may be read-only, and the data directory the one writable place.
describe.runIf(process.platform === 'linux')('SQLite temporary files', () => {
  it('go to the data directory once the database is connected, not to /var/tmp or /tmp', async () => {
    // SQLite reads SQLITE_TMPDIR once, when the process's first connection initialises it: a
    // connection made before ours (here, an in-memory one) must not make ours miss the setting.
    new SqliteDatabase(':memory:').close();
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
      const before = openFiles();
      for (const _row of native.prepare('select a from spill order by b desc, a desc').iterate()) {
        seen = newTemporaries(before);
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
