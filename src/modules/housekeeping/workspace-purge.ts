import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';

/**
 * The purge of deleted workspaces (`DELETE /workspaces/:id` only marks them). Like the rest of
 * housekeeping's deletes this crosses the rooms' tables on purpose: it is one rule over
 * everything a workspace owns, each statement bounded by `limit`.
 */

/**
 * One step of purging a deleted workspace: deletes up to `limit` rows of one kind and says how
 * many went.
 */
export type PurgeStep = (ex: Executor, workspaceUuid: string, limit: number) => Promise<number>;

/** `delete … where (key) in (select key … limit n)`: at most `limit` rows, chosen by `from`. */
async function deleteLimited(ex: Executor, table: string, key: string[], from: ReturnType<typeof sql>) {
  const cols = sql.join(key.map((k) => sql.ref(`${table}.${k}`)));
  const bare = sql.join(key.map((k) => sql.ref(k)));
  const result = await sql`delete from ${sql.table(table)} where (${bare}) in (select ${cols} ${from})`.execute(ex);
  return Number(result.numAffectedRows ?? 0n);
}

/** Rows of `table` whose own `workspace_uuid` names the workspace. */
const owned =
  (table: string, key: string[]): PurgeStep =>
  (ex, ws, limit) =>
    deleteLimited(ex, table, key, sql`from ${sql.table(table)} where workspace_uuid = ${ws} limit ${limit}`);

/** Rows of `table` hanging off the workspace's agents (through `agents_user_idx`). */
const ofAgents =
  (table: string, key: string[], via: string): PurgeStep =>
  (ex, ws, limit) =>
    deleteLimited(
      ex,
      table,
      key,
      sql`from ${sql.table(table)} join agents on agents.uuid = ${sql.ref(`${table}.${via}`)}
        where agents.workspace_uuid = ${ws} limit ${limit}`,
    );

/**
 * The rows of a deleted workspace, children before parents, so that no statement cascades into
 * an unbounded number of rows: a task's events and a trigger's deliveries go in batches of their
 * own before their task or trigger; what still cascades from a task (its callbacks, push run and
 * A2A rows) is bounded per task, as in the retention sweep. The workspace row goes last (its
 * members and invitations cascade), by `purgeWorkspaceRow`.
 */
export const WORKSPACE_PURGE_STEPS: ReadonlyArray<readonly [string, PurgeStep]> = [
  [
    'trigger_deliveries',
    (ex, ws, limit) =>
      deleteLimited(
        ex,
        'trigger_deliveries',
        ['uuid'],
        sql`from trigger_deliveries join triggers on triggers.uuid = trigger_deliveries.trigger_uuid
          join agents on agents.uuid = triggers.agent_uuid where agents.workspace_uuid = ${ws} limit ${limit}`,
      ),
  ],
  ['trigger_signatures', owned('trigger_signatures', ['trigger_uuid', 'signature'])],
  ['triggers', ofAgents('triggers', ['uuid'], 'agent_uuid')],
  [
    'task_events',
    (ex, ws, limit) =>
      deleteLimited(
        ex,
        'task_events',
        ['task_uuid', 'seq'],
        sql`from task_events join tasks on tasks.uuid = task_events.task_uuid
          join agents on agents.uuid = tasks.agent_uuid where agents.workspace_uuid = ${ws} limit ${limit}`,
      ),
  ],
  ['tasks', ofAgents('tasks', ['uuid'], 'agent_uuid')],
  ['a2a_message_ids', ofAgents('a2a_message_ids', ['agent_uuid', 'message_id'], 'agent_uuid')],
  ['agents', owned('agents', ['uuid'])],
  ['idempotency_keys', owned('idempotency_keys', ['workspace_uuid', 'key'])],
  ['telemetry_spans', owned('telemetry_spans', ['workspace_uuid', 'trace_id', 'span_id'])],
  ['telemetry_logs', owned('telemetry_logs', ['uuid'])],
  ['spotlight_calls', owned('spotlight_calls', ['uuid'])],
  ['spotlight_spend', owned('spotlight_spend', ['workspace_uuid', 'scope', 'scope_id', 'window_start'])],
  ['spotlight_budgets', owned('spotlight_budgets', ['workspace_uuid', 'scope', 'scope_id'])],
  ['provider_credentials', owned('provider_credentials', ['uuid'])],
  ['platform_keys', owned('platform_keys', ['uuid'])],
  ['ingest_tokens', owned('ingest_tokens', ['uuid'])],
  ['signing_secrets', owned('signing_secrets', ['uuid'])],
];

/** Up to `limit` deleted workspaces still to purge, the longest deleted first. */
export async function deletedWorkspaces(ex: Executor, limit: number): Promise<string[]> {
  const rows = await ex
    .selectFrom('workspaces')
    .select('uuid')
    .where('deleted_at', 'is not', null)
    .orderBy('deleted_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.uuid);
}

/** The deleted workspace's own row, once everything else of it is gone; members and invitations cascade. */
export async function purgeWorkspaceRow(ex: Executor, workspaceUuid: string): Promise<number> {
  const result = await ex
    .deleteFrom('workspaces')
    .where('uuid', '=', workspaceUuid)
    .where('deleted_at', 'is not', null)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
