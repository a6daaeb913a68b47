import { sql } from 'kysely';
import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { type BudgetScope, dbNanos, WINDOW_OF, windowStartOf } from './budgets-fns.js';

/** A scope's limits in nano-dollars; null is no limit. */
export interface Limits {
  monthly: number | null;
  daily: number | null;
  perTask: number | null;
}

export const NO_LIMITS: Limits = { monthly: null, daily: null, perTask: null };

/** One (scope, id, window) whose spend is wanted; `id` is the workspace's uuid for `account`. */
export interface SpendKey {
  scope: BudgetScope;
  id: string;
  windowStart: string;
}

/** What a recorded call adds to spend: its cost and the scopes it counts for. */
export interface SpendOf {
  workspaceUuid: string;
  createdAt: string;
  costNanos: number | null;
  platformKeyUuid: string | null;
  agentUuid: string | null;
  taskUuid: string | null;
}

const limitsOf = (r: { monthly_nanos: unknown; daily_nanos: unknown; per_task_nanos: unknown }): Limits => ({
  monthly: dbNanos(r.monthly_nanos as number | string | null),
  daily: dbNanos(r.daily_nanos as number | string | null),
  perTask: dbNanos(r.per_task_nanos as number | string | null),
});

/** The keys of spend one call adds to, by its own `created_at`. */
export function spendKeysOf(call: SpendOf): SpendKey[] {
  const keys: SpendKey[] = [{ scope: 'account', id: call.workspaceUuid, windowStart: '' }];
  if (call.platformKeyUuid) keys.push({ scope: 'platform_key', id: call.platformKeyUuid, windowStart: '' });
  if (call.agentUuid) keys.push({ scope: 'agent', id: call.agentUuid, windowStart: '' });
  if (call.taskUuid) keys.push({ scope: 'task', id: call.taskUuid, windowStart: '' });
  return keys.map((k) => ({ ...k, windowStart: windowStartOf(WINDOW_OF[k.scope], call.createdAt) }));
}

/**
 * Storage of budgets: limits (spotlight_budgets) and running spend (spotlight_spend), the only
 * code that touches those tables. What a budget names (an agent, a key, a task) is asked of the
 * rooms that own them (see BudgetOwners in budgets-service.ts).
 */
export const budgetsRepo = {
  /**
   * Adds the call's cost to each of its scopes' current windows, in the transaction that writes
   * its record (so spend always equals the sum of committed records). Upsert-increment: one row
   * per scope, never a scan of records. A null or zero cost adds nothing.
   */
  async addSpend(ex: Executor, call: SpendOf): Promise<void> {
    if (!call.costNanos) return;
    // The same order in every transaction (account first), so concurrent writers never deadlock.
    for (const key of spendKeysOf(call)) {
      await withDbErrors(
        ex
          .insertInto('spotlight_spend')
          .values({
            workspace_uuid: call.workspaceUuid,
            scope: key.scope,
            scope_id: key.id,
            window_start: key.windowStart,
            nanos: call.costNanos,
          })
          .onConflict((oc) =>
            oc
              .columns(['workspace_uuid', 'scope', 'scope_id', 'window_start'])
              .doUpdateSet({ nanos: sql`spotlight_spend.nanos + excluded.nanos` }),
          )
          .execute(),
      );
    }
  },

  /** Committed spend of each key (0 when none), in the order asked. */
  async spend(ex: Executor, workspaceUuid: string, keys: SpendKey[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const rows = await withDbErrors(
      ex
        .selectFrom('spotlight_spend')
        .select(['scope', 'scope_id', 'window_start', 'nanos'])
        .where('workspace_uuid', '=', workspaceUuid)
        .where((eb) =>
          eb.or(
            keys.map((k) =>
              eb.and([eb('scope', '=', k.scope), eb('scope_id', '=', k.id), eb('window_start', '=', k.windowStart)]),
            ),
          ),
        )
        .execute(),
    );
    return keys.map((k) => {
      const row = rows.find((r) => r.scope === k.scope && r.scope_id === k.id && r.window_start === k.windowStart);
      return row ? (dbNanos(row.nanos) ?? 0) : 0;
    });
  },

  /** Limits of the given scopes that have a row (account, key, agent), keyed `scope:id`. */
  async limits(
    ex: Executor,
    workspaceUuid: string,
    scopes: Array<{ scope: BudgetScope; id: string }>,
  ): Promise<Map<string, Limits>> {
    const out = new Map<string, Limits>();
    if (scopes.length === 0) return out;
    const rows = await withDbErrors(
      ex
        .selectFrom('spotlight_budgets')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .where((eb) => eb.or(scopes.map((s) => eb.and([eb('scope', '=', s.scope), eb('scope_id', '=', s.id)]))))
        .execute(),
    );
    for (const r of rows) out.set(`${r.scope}:${r.scope_id}`, limitsOf(r));
    return out;
  },

  /** Sets a scope's limits (all three columns, as merged by the caller). */
  setLimits(ex: Executor, workspaceUuid: string, scope: BudgetScope, id: string, limits: Limits, at: string) {
    const values = { monthly_nanos: limits.monthly, daily_nanos: limits.daily, per_task_nanos: limits.perTask };
    return withDbErrors(
      ex
        .insertInto('spotlight_budgets')
        .values({ workspace_uuid: workspaceUuid, scope, scope_id: id, ...values, updated_at: at })
        .onConflict((oc) =>
          oc.columns(['workspace_uuid', 'scope', 'scope_id']).doUpdateSet({ ...values, updated_at: at }),
        )
        .execute(),
    );
  },

  /** Ids of the scope's budgets with at least one limit, ascending. */
  async limitedIds(ex: Executor, workspaceUuid: string, scope: 'agent' | 'platform_key'): Promise<string[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('spotlight_budgets')
        .select('scope_id')
        .where('workspace_uuid', '=', workspaceUuid)
        .where('scope', '=', scope)
        .where((eb) =>
          eb.or([
            eb('monthly_nanos', 'is not', null),
            eb('daily_nanos', 'is not', null),
            eb('per_task_nanos', 'is not', null),
          ]),
        )
        .orderBy('scope_id')
        .execute(),
    );
    return rows.map((r) => r.scope_id);
  },

  /**
   * Deletes up to `batch` month and day totals of windows that started before `before` (the
   * records' retention cutoff: only current windows are checked or shown). Returns how many went.
   */
  async deleteExpiredWindows(ex: Executor, before: string, batch: number): Promise<number> {
    const result = await withDbErrors(
      sql`delete from spotlight_spend where (workspace_uuid, scope, scope_id, window_start) in (
        select s.workspace_uuid, s.scope, s.scope_id, s.window_start from spotlight_spend s
        where s.scope <> 'task' and s.window_start < ${before}
        limit ${batch})`.execute(ex),
    );
    return Number(result.numAffectedRows ?? 0n);
  },

  /** Up to `limit` distinct task ids with a spend total, ascending, after `after`. */
  async taskIdsAfter(ex: Executor, after: string, limit: number): Promise<string[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('spotlight_spend')
        .select('scope_id')
        .distinct()
        .where('scope', '=', 'task')
        .where('scope_id', '>', after)
        .orderBy('scope_id')
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => r.scope_id);
  },

  /** Deletes the spend totals of these tasks; returns how many went. */
  async deleteTaskSpend(ex: Executor, taskUuids: readonly string[]): Promise<number> {
    if (taskUuids.length === 0) return 0;
    const result = await withDbErrors(
      ex
        .deleteFrom('spotlight_spend')
        .where('scope', '=', 'task')
        .where('scope_id', 'in', taskUuids)
        .executeTakeFirst(),
    );
    return Number(result.numDeletedRows);
  },

  /** Deletes an agent's budget (the agent is being deleted). */
  deleteAgentBudget(ex: Executor, agentUuid: string) {
    return withDbErrors(
      ex.deleteFrom('spotlight_budgets').where('scope', '=', 'agent').where('scope_id', '=', agentUuid).execute(),
    );
  },
};

export type BudgetsRepo = typeof budgetsRepo;
