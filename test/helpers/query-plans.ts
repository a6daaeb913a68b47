import { CompiledQuery } from 'kysely';
import SqliteDatabase from '../../src/db/sqlite-driver.js';
import type { TestApp } from './app.js';

/*
 * The SQLite query plans of the statements a piece of work sends: for tests that a lookup by key
 * stays one, whatever the planner would rather do without statistics. Every better-sqlite3
 * statement of the process is watched (the prototype is shared), only while `fn` runs.
 */

type Method = (this: { source: string }, ...args: unknown[]) => unknown;
let watching: Array<{ text: string; args: unknown[] }> | null = null;
const statement: Record<string, Method> = Object.getPrototypeOf(new SqliteDatabase(':memory:').prepare('select 1'));
for (const method of ['all', 'get', 'run', 'iterate']) {
  const original = statement[method] as Method;
  statement[method] = function (this: { source: string }, ...args: unknown[]) {
    // Kysely passes the parameters as one array.
    watching?.push({ text: this.source, args: args.length === 1 && Array.isArray(args[0]) ? args[0] : args });
    return original.apply(this, args);
  };
}

/** For each statement sent while `fn` runs whose text matches `which`: its text and plan steps. */
export async function sqlitePlans(
  t: TestApp,
  which: RegExp,
  fn: () => Promise<unknown>,
): Promise<Array<{ text: string; steps: string[] }>> {
  const sent: Array<{ text: string; args: unknown[] }> = [];
  watching = sent;
  try {
    await fn();
  } finally {
    watching = null;
  }
  const out = [];
  for (const { text, args } of sent.filter((s) => which.test(s.text))) {
    const plan = await t.runtime.db.kysely.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${text}`, args),
    );
    out.push({ text, steps: plan.rows.map((r) => r.detail) });
  }
  return out;
}
