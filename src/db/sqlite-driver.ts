import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * better-sqlite3 as this Node.js needs it. Version 12 derives its statements from `node::ObjectWrap`,
 * whose destructor aborts Node.js 24.19+ (`Assertion failed: (env) != nullptr`) when the garbage
 * collector frees a statement outside JavaScript; version 13 is built on Node-API and does not, but
 * needs Node.js 22 (it crashes on 20). So Node.js 20 loads 12 (`better-sqlite3`) and 22+ load 13
 * (the `better-sqlite3-n22` alias). Both have the same API; the types are 12's.
 */
export const SQLITE_DRIVER =
  Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-n22' : 'better-sqlite3';

const SqliteDatabase = createRequire(import.meta.url)(SQLITE_DRIVER) as typeof BetterSqlite3;
export default SqliteDatabase;

/** SQLITE_TMPDIR as the operator set it when the process started (undefined: not set). */
const OPERATOR_TMPDIR = process.env.SQLITE_TMPDIR;

/**
 * Points SQLite's temporary files (sorts that outgrow the page cache, statement journals, VACUUM)
 * at `dir`, the database's directory, unless the operator set SQLITE_TMPDIR. SQLite otherwise puts
 * them in TMPDIR, /var/tmp or /tmp, which a container with a read-only root filesystem cannot write:
 * the data directory is the one place the service writes. SQLite reads SQLITE_TMPDIR only once, when
 * the first connection of the process initialises it, so the variable alone would miss a process
 * that opened any database before (a test run, a CLI command); the `temp_store_directory` pragma
 * sets the directory SQLite checks first for every temporary file it makes from then on (one per
 * process, which is what the service has: one data directory). SQLite unlinks each file as it
 * opens it. The variable is still set for child processes.
 */
export function keepTemporariesIn(native: BetterSqlite3.Database, dir: string): void {
  if (OPERATOR_TMPDIR !== undefined) return;
  process.env.SQLITE_TMPDIR = dir;
  native.pragma(`temp_store_directory = '${dir.replaceAll("'", "''")}'`);
}
