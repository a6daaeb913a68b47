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
 * the data directory is the one place the service writes. SQLite unlinks each one as it opens it,
 * and reads the variable each time it makes one, so setting it before the connection suffices.
 */
export function keepTemporariesIn(dir: string): void {
  if (OPERATOR_TMPDIR === undefined) process.env.SQLITE_TMPDIR = dir;
}
