import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import type { LimitScope, Limits } from './limits-fns.js';

/** A stored row's limits (PostgreSQL answers a bigint as a string). */
const limitsOf = (r: { rpm: number | null; tpm: number | string | null }): Limits => ({
  rpm: r.rpm === null ? null : Number(r.rpm),
  tpm: r.tpm === null ? null : Number(r.tpm),
});

/** The key of a scope in a workspace's map of limits. */
export const limitKey = (scope: LimitScope, id: string) => `${scope}:${id}`;

/**
 * Storage of the model proxy's RPM/TPM limits (spotlight_rate_limits), the only code that touches
 * that table. The counters live in the shared rate-limit store, not here.
 */
export const limitsRepo = {
  /** Every limited scope of a workspace, by `limitKey` (the proxy's cached view). */
  async workspaceLimits(ex: Executor, workspaceUuid: string): Promise<Map<string, Limits>> {
    const rows = await withDbErrors(
      ex
        .selectFrom('spotlight_rate_limits')
        .select(['scope', 'scope_id', 'rpm', 'tpm'])
        .where('workspace_uuid', '=', workspaceUuid)
        .where((eb) => eb.or([eb('rpm', 'is not', null), eb('tpm', 'is not', null)]))
        .execute(),
    );
    return new Map(rows.map((r) => [limitKey(r.scope as LimitScope, r.scope_id), limitsOf(r)]));
  },

  /** One scope's limits (both null when none was ever set). */
  async find(ex: Executor, workspaceUuid: string, scope: LimitScope, id: string): Promise<Limits> {
    const row = await withDbErrors(
      ex
        .selectFrom('spotlight_rate_limits')
        .select(['rpm', 'tpm'])
        .where('workspace_uuid', '=', workspaceUuid)
        .where('scope', '=', scope)
        .where('scope_id', '=', id)
        .executeTakeFirst(),
    );
    return row ? limitsOf(row) : { rpm: null, tpm: null };
  },

  async save(ex: Executor, workspaceUuid: string, scope: LimitScope, id: string, limits: Limits, now: string) {
    await withDbErrors(
      ex
        .insertInto('spotlight_rate_limits')
        .values({
          workspace_uuid: workspaceUuid,
          scope,
          scope_id: id,
          rpm: limits.rpm,
          tpm: limits.tpm,
          updated_at: now,
        })
        .onConflict((oc) =>
          oc
            .columns(['workspace_uuid', 'scope', 'scope_id'])
            .doUpdateSet({ rpm: limits.rpm, tpm: limits.tpm, updated_at: now }),
        )
        .execute(),
    );
  },

  /** An agent's limits go with it (in the transaction that deletes it). */
  async deleteAgentLimits(ex: Executor, agentUuid: string): Promise<void> {
    await withDbErrors(
      ex.deleteFrom('spotlight_rate_limits').where('scope', '=', 'agent').where('scope_id', '=', agentUuid).execute(),
    );
  },
};
