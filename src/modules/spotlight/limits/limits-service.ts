import type { ChangeChannel } from '../../../db/change-cache.js';
import type { Db } from '../../../db/connect.js';
import { notFound } from '../../../http/errors.js';
import type { Acting } from '../../../lib/principal.js';
import { type Clock, iso } from '../../../lib/time.js';
import { recordAudit } from '../../audit/audit-repo.js';
import type { AdmissionControl } from './limits-admission.js';
import type { LimitScope, Limits } from './limits-fns.js';
import { limitsRepo } from './limits-repo.js';
import type { RateLimitView } from './limits-schemas.js';

/** What the limits ask of the rooms that own agents and keys. */
export interface LimitOwners {
  agentExists(workspaceUuid: string, agentUuid: string): Promise<boolean>;
  keyExists(workspaceUuid: string, keyUuid: string): Promise<boolean>;
}

/** The RPM/TPM limits of keys and agents under /spotlight/rate_limits. */
export function createLimitsService(deps: {
  db: Db;
  owners: LimitOwners;
  admission: Pick<AdmissionControl, 'current'>;
  /** Where a change is announced, so every instance's cached limits of the workspace are dropped. */
  changes: ChangeChannel;
  /** Drops this instance's cached limits of the workspace once the change has committed. */
  changed: (workspaceUuid: string) => void;
  clock: Clock;
}) {
  const { db, owners } = deps;

  async function view(scope: LimitScope, id: string, limits: Limits): Promise<RateLimitView> {
    const w = await deps.admission.current(scope, id);
    const remaining = (limit: number | null, used: number) => (limit === null ? null : Math.max(0, limit - used));
    return {
      scope,
      id,
      limits,
      window: {
        start: iso(w.start),
        end: iso(w.end),
        requests: w.requests,
        tokens: w.tokens,
        remaining_requests: remaining(limits.rpm, w.requests),
        remaining_tokens: remaining(limits.tpm, w.tokens),
      },
    };
  }

  /** @throws AppError NOT_FOUND when the agent or key is not the workspace's. */
  async function mustExist(workspaceUuid: string, scope: LimitScope, id: string) {
    if (scope === 'agent' && !(await owners.agentExists(workspaceUuid, id))) throw notFound('Agent');
    if (scope === 'platform_key' && !(await owners.keyExists(workspaceUuid, id))) throw notFound('Platform key');
  }

  return {
    /** Every agent, then every key, with a limit; each group by ascending uuid. */
    async list(workspaceUuid: string): Promise<RateLimitView[]> {
      const all = await limitsRepo.workspaceLimits(db.kysely, workspaceUuid);
      const of = (scope: LimitScope) =>
        [...all.entries()]
          .filter(([key]) => key.startsWith(`${scope}:`))
          .map(([key, limits]) => ({ id: key.slice(scope.length + 1), limits }))
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const out: RateLimitView[] = [];
      for (const scope of ['agent', 'platform_key'] as const)
        for (const { id, limits } of of(scope)) out.push(await view(scope, id, limits));
      return out;
    },

    /** @throws AppError NOT_FOUND for another workspace's or an unknown agent or key. */
    async get(workspaceUuid: string, scope: LimitScope, id: string): Promise<RateLimitView> {
      await mustExist(workspaceUuid, scope, id);
      return view(scope, id, await limitsRepo.find(db.kysely, workspaceUuid, scope, id));
    },

    /**
     * Fields left out keep their value; null removes a limit. Audited as rate_limit.update with
     * the new values. Applies from the next admission on (on other instances, once they hear it).
     * @throws AppError NOT_FOUND for another workspace's or an unknown agent or key.
     */
    async patch(
      acting: Acting,
      scope: LimitScope,
      id: string,
      patch: { rpm?: number | null; tpm?: number | null },
    ): Promise<RateLimitView> {
      const ws = acting.workspaceUuid;
      await mustExist(ws, scope, id);
      const next = await db.transaction(async (trx) => {
        const current = await limitsRepo.find(trx, ws, scope, id);
        const limits: Limits = {
          rpm: patch.rpm === undefined ? current.rpm : patch.rpm,
          tpm: patch.tpm === undefined ? current.tpm : patch.tpm,
        };
        await limitsRepo.save(trx, ws, scope, id, limits, iso(deps.clock.now()));
        await recordAudit(trx, acting, {
          action: 'rate_limit.update',
          target: { type: scope === 'agent' ? 'agent' : 'key', uuid: id },
          details: { rpm: limits.rpm, tpm: limits.tpm },
        });
        await deps.changes.announce(trx, ws);
        return limits;
      });
      deps.changed(ws);
      return view(scope, id, next);
    },
  };
}

export type LimitsService = ReturnType<typeof createLimitsService>;
