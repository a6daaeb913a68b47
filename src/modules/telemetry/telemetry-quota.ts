import type { Db } from '../../db/connect.js';
import type { Clock } from '../../lib/time.js';
import type { TelemetryRepo } from './telemetry-repo.js';

/** How long a user's counted total is trusted before it is counted again. */
const RECOUNT_AFTER_MS = 60_000;

/**
 * The per-account bound on stored telemetry (TASKHOOK_TELEMETRY_MAX_RECORDS): spans and log
 * records within retention. Counting millions of rows on every export would cost more than the
 * export, so a user's total is counted at most once a minute per instance and what this instance
 * stores meanwhile is added to it. Re-sent spans that replace stored ones are added too, so the
 * bound errs on the strict side until the next count; other instances' writes are seen at it.
 */
export function createRecordQuota(deps: {
  db: Db;
  repo: Pick<TelemetryRepo, 'countLiveRecords'>;
  clock: Clock;
  max: number;
  cutoff: () => string;
}) {
  const known = new Map<string, { count: number; at: number }>();

  async function current(workspaceUuid: string): Promise<number> {
    const now = deps.clock.now();
    const seen = known.get(workspaceUuid);
    if (seen && now - seen.at < RECOUNT_AFTER_MS) return seen.count;
    const count = await deps.repo.countLiveRecords(deps.db.kysely, workspaceUuid, deps.cutoff(), deps.max + 1);
    if (known.size > 10_000) known.clear();
    known.set(workspaceUuid, { count, at: now });
    return count;
  }

  return {
    /** The refusal message when `incoming` more records would pass the bound, else null. */
    async refusal(workspaceUuid: string, incoming: number): Promise<string | null> {
      if (incoming === 0) return null;
      const held = await current(workspaceUuid);
      if (held + incoming <= deps.max) return null;
      return `export refused whole: this account keeps at most ${deps.max} spans and log records (TASKHOOK_TELEMETRY_MAX_RECORDS) and holds ${Math.min(held, deps.max)}`;
    },
    /** Counts records this instance has just stored. */
    added(workspaceUuid: string, n: number): void {
      const seen = known.get(workspaceUuid);
      if (seen) seen.count += n;
    },
  };
}

export type RecordQuota = ReturnType<typeof createRecordQuota>;
