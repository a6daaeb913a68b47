import type { Db } from '../../../db/connect.js';
import { notFound } from '../../../http/errors.js';
import type { Acting } from '../../../lib/principal.js';
import { type Clock, iso } from '../../../lib/time.js';
import { recordAudit } from '../../audit/audit-repo.js';
import {
  type BudgetScope,
  dayWindow,
  monthWindow,
  nanosOf,
  type Refusal,
  reached,
  refusalOf,
  type ScopeState,
  usdOf,
} from './budgets-fns.js';
import { type BudgetsRepo, type Limits, NO_LIMITS, type SpendKey } from './budgets-repo.js';
import type { BudgetView, LimitsPatch, WindowView } from './budgets-schemas.js';

/** The scopes of one call: who authenticated it and what it is attributed to. */
export interface CallScopes {
  workspaceUuid: string;
  platformKeyUuid: string | null;
  agentUuid: string | null;
  taskUuid: string | null;
}

/** A call's budgets: the limit that refuses it (or null), and whether any limit applies to it. */
export interface BudgetCheck {
  refusal: Refusal | null;
  applies: boolean;
}

/**
 * What a budget asks of the rooms that own what it names: a task's agent and creation time (the
 * tasks room), whether an agent is live (the agents room), whether a key is the workspace's (the
 * accounts room).
 */
export interface BudgetOwners {
  task(workspaceUuid: string, taskUuid: string): Promise<{ agent_uuid: string; created_at: string } | undefined>;
  agentExists(workspaceUuid: string, agentUuid: string): Promise<boolean>;
  liveAgents(workspaceUuid: string): Promise<Set<string>>;
  keyExists(workspaceUuid: string, keyUuid: string): Promise<boolean>;
}

/** Which limit field is stored in which column. */
const FIELD_COLUMN = { monthly_usd: 'monthly', daily_usd: 'daily', per_task_usd: 'perTask' } as const;

function windowView(w: { start: string; end: string | null }, limit: number | null, spent: number): WindowView {
  const state: ScopeState = { scope: 'account', id: null, limitNanos: limit, spentNanos: spent, end: w.end };
  return {
    start: w.start,
    end: w.end,
    limit_usd: limit === null ? null : usdOf(limit),
    spent_usd: usdOf(spent),
    remaining_usd: limit === null ? null : usdOf(Math.max(0, limit - spent)),
    exceeded: reached(state),
  };
}

const usdOrNull = (n: number | null) => (n === null ? null : usdOf(n));

/**
 * Budgets of the model proxy: limits per scope, spend read from the running totals that each
 * call record's transaction keeps (never from the records themselves), and the check made before
 * a call goes upstream.
 */
export function createBudgetsService(deps: { db: Db; repo: BudgetsRepo; owners: BudgetOwners; clock: Clock }) {
  const { db, repo, owners } = deps;

  /**
   * The limit and committed spend of each scope of a call, now. Without any limit row the spend is
   * not read at all: a workspace without budgets pays one indexed lookup per call.
   */
  async function states(c: CallScopes, now: number): Promise<ScopeState[]> {
    const scoped: Array<{ scope: BudgetScope; id: string }> = [{ scope: 'account', id: c.workspaceUuid }];
    if (c.platformKeyUuid) scoped.push({ scope: 'platform_key', id: c.platformKeyUuid });
    if (c.agentUuid) scoped.push({ scope: 'agent', id: c.agentUuid });
    const limits = await repo.limits(db.kysely, c.workspaceUuid, scoped);
    const month = monthWindow(now);
    const day = dayWindow(now);
    const limitOf = (scope: BudgetScope, id: string): Limits => limits.get(`${scope}:${id}`) ?? NO_LIMITS;
    const wanted: Array<ScopeState & { key: SpendKey }> = [];
    const add = (scope: BudgetScope, id: string, limit: number | null, windowStart: string, end: string | null) => {
      if (limit !== null)
        wanted.push({ scope, id, limitNanos: limit, spentNanos: 0, end, key: { scope, id, windowStart } });
    };
    add('account', c.workspaceUuid, limitOf('account', c.workspaceUuid).monthly, month.start, month.end);
    if (c.platformKeyUuid) {
      add(
        'platform_key',
        c.platformKeyUuid,
        limitOf('platform_key', c.platformKeyUuid).monthly,
        month.start,
        month.end,
      );
    }
    if (c.agentUuid) {
      const agent = limitOf('agent', c.agentUuid);
      add('agent', c.agentUuid, agent.daily, day.start, day.end);
      if (c.taskUuid) add('task', c.taskUuid, agent.perTask, '', null);
    }
    const spent = await repo.spend(
      db.kysely,
      c.workspaceUuid,
      wanted.map((w) => w.key),
    );
    return wanted.map(({ key: _key, ...s }, i) => ({ ...s, spentNanos: spent[i] ?? 0 }));
  }

  async function spendOf(workspaceUuid: string, scope: BudgetScope, id: string, windowStart: string) {
    return (await repo.spend(db.kysely, workspaceUuid, [{ scope, id, windowStart }]))[0] ?? 0;
  }

  async function limitsOf(workspaceUuid: string, scope: BudgetScope, id: string): Promise<Limits> {
    return (await repo.limits(db.kysely, workspaceUuid, [{ scope, id }])).get(`${scope}:${id}`) ?? NO_LIMITS;
  }

  /** The budget object of a scope, at the moment of the request. */
  async function view(workspaceUuid: string, scope: BudgetScope, id: string): Promise<BudgetView> {
    const now = deps.clock.now();
    const month = monthWindow(now);
    if (scope === 'account' || scope === 'platform_key') {
      const limits = await limitsOf(workspaceUuid, scope, id);
      const spent = await spendOf(workspaceUuid, scope, id, month.start);
      const body = {
        limits: { monthly_usd: usdOrNull(limits.monthly) },
        windows: { month: windowView(month, limits.monthly, spent) },
      };
      return scope === 'account' ? { scope, id: null, ...body } : { scope, id, ...body };
    }
    if (scope === 'agent') {
      const day = dayWindow(now);
      const limits = await limitsOf(workspaceUuid, 'agent', id);
      const spent = await spendOf(workspaceUuid, 'agent', id, day.start);
      return {
        scope,
        id,
        limits: { daily_usd: usdOrNull(limits.daily), per_task_usd: usdOrNull(limits.perTask) },
        windows: { day: windowView(day, limits.daily, spent) },
      };
    }
    const task = await owners.task(workspaceUuid, id);
    if (!task) throw notFound('Task');
    const limits = await limitsOf(workspaceUuid, 'agent', task.agent_uuid);
    const spent = await spendOf(workspaceUuid, 'task', id, '');
    return {
      scope,
      id,
      limits: { per_task_usd: usdOrNull(limits.perTask) },
      windows: { task: windowView({ start: task.created_at, end: null }, limits.perTask, spent) },
    };
  }

  /** @throws AppError NOT_FOUND when the agent, key or task is not the workspace's. */
  async function mustExist(workspaceUuid: string, scope: BudgetScope, id: string) {
    if (scope === 'agent' && !(await owners.agentExists(workspaceUuid, id))) throw notFound('Agent');
    if (scope === 'platform_key' && !(await owners.keyExists(workspaceUuid, id))) throw notFound('Platform key');
    if (scope === 'task' && !(await owners.task(workspaceUuid, id))) throw notFound('Task');
  }

  return {
    /**
     * The check before a call goes upstream: the first reached limit of its scopes (task, agent,
     * platform_key, account), or null, and whether a budget applies to the call at all (one of its
     * scopes has a limit, reached or not: an unpriced model is then refused). Spend is what was
     * committed before this moment.
     */
    async check(c: CallScopes): Promise<BudgetCheck> {
      const limited = await states(c, deps.clock.now());
      return { refusal: refusalOf(limited), applies: limited.length > 0 };
    },

    /** One scope's budget object. @throws AppError NOT_FOUND for another workspace's or an unknown id. */
    async get(workspaceUuid: string, scope: BudgetScope, id: string | null): Promise<BudgetView> {
      await mustExist(workspaceUuid, scope, id ?? workspaceUuid);
      return view(workspaceUuid, scope, id ?? workspaceUuid);
    },

    /** The account's budget, then each agent's and key's with a limit, each group by ascending uuid. */
    async list(workspaceUuid: string): Promise<BudgetView[]> {
      const live = await owners.liveAgents(workspaceUuid);
      const agents = (await repo.limitedIds(db.kysely, workspaceUuid, 'agent')).filter((id) => live.has(id));
      const keys = await repo.limitedIds(db.kysely, workspaceUuid, 'platform_key');
      const out = [await view(workspaceUuid, 'account', workspaceUuid)];
      for (const id of agents) out.push(await view(workspaceUuid, 'agent', id));
      for (const id of keys) out.push(await view(workspaceUuid, 'platform_key', id));
      return out;
    },

    /**
     * PATCH semantics: fields left out keep their value, null removes a limit; amounts are rounded
     * to the nearest nano-dollar. Audited as `budget.update` with the names of the fields sent.
     * @throws AppError NOT_FOUND for another workspace's or an unknown agent or key.
     */
    async patch(
      acting: Acting,
      scope: Exclude<BudgetScope, 'task'>,
      id: string | null,
      patch: LimitsPatch,
    ): Promise<BudgetView> {
      const ws = acting.workspaceUuid;
      const scopeId = id ?? ws;
      await mustExist(ws, scope, scopeId);
      const sent = Object.keys(patch).filter((k): k is keyof typeof FIELD_COLUMN => k in FIELD_COLUMN);
      if (sent.length > 0) {
        await db.transaction(async (trx) => {
          const current = (await repo.limits(trx, ws, [{ scope, id: scopeId }])).get(`${scope}:${scopeId}`);
          const next: Limits = { ...(current ?? NO_LIMITS) };
          for (const f of sent) {
            const v = patch[f];
            next[FIELD_COLUMN[f]] = v === null || v === undefined ? null : nanosOf(v);
          }
          // Only what changed is named, and a PATCH that changes nothing writes nothing (as agents).
          const fields = sent.filter((f) => next[FIELD_COLUMN[f]] !== (current ?? NO_LIMITS)[FIELD_COLUMN[f]]);
          if (fields.length === 0) return;
          await repo.setLimits(trx, ws, scope, scopeId, next, iso(deps.clock.now()));
          await recordAudit(trx, acting, {
            action: 'budget.update',
            target: { type: 'budget', uuid: scopeId },
            details: { scope, id, fields },
          });
        });
      }
      return view(ws, scope, scopeId);
    },
  };
}

export type BudgetsService = ReturnType<typeof createBudgetsService>;
