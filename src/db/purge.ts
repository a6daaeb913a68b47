import { type RawBuilder, sql } from 'kysely';
import type { Executor } from './transactions.js';

/**
 * The shape of the purge of a deleted workspace. Each room exports the steps that delete its own
 * rows; housekeeping runs them in order (children before parents) and paces them. A step deletes at
 * most `limit` rows of one kind and says how many went, so no statement holds the writer for long.
 */

/** Deletes up to `limit` rows of one kind owned by the workspace `workspaceUuid`. */
export type PurgeStep = (ex: Executor, workspaceUuid: string, limit: number) => Promise<number>;

/** Deletes up to `limit` rows of one kind hanging off the agent `agentUuid` (through its index). */
export type AgentPurgeStep = (ex: Executor, agentUuid: string, limit: number) => Promise<number>;

/**
 * `delete from table where (key) in (select key <from>)`: at most as many rows as `from` selects
 * (it ends in `limit n`). `from` names `table` itself, joined only to tables of the same room.
 */
export async function deleteLimited(
  ex: Executor,
  table: string,
  key: readonly string[],
  from: RawBuilder<unknown>,
): Promise<number> {
  const cols = sql.join(key.map((k) => sql.ref(`${table}.${k}`)));
  const bare = sql.join(key.map((k) => sql.ref(k)));
  const result = await sql`delete from ${sql.table(table)} where (${bare}) in (select ${cols} ${from})`.execute(ex);
  return Number(result.numAffectedRows ?? 0n);
}

/** A step over `table`'s rows whose own `column` (default `workspace_uuid`) names the owner. */
export const ownedBy =
  (table: string, key: readonly string[], column = 'workspace_uuid') =>
  (ex: Executor, owner: string, limit: number): Promise<number> =>
    deleteLimited(ex, table, key, sql`from ${sql.table(table)} where ${sql.ref(column)} = ${owner} limit ${limit}`);

/** Retention: a step over `table`'s rows whose `expires_at` is before `now`, at most `limit` of them. */
export const expiredBefore =
  (table: string, key: readonly string[]) =>
  (ex: Executor, now: string, limit: number): Promise<number> =>
    deleteLimited(ex, table, key, sql`from ${sql.table(table)} where expires_at < ${now} limit ${limit}`);
