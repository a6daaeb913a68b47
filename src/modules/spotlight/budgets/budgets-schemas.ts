import { type Static, Type } from '@sinclair/typebox';
import { StrictObject, UuidSchema } from '../../../http/common-schemas.js';
import { MAX_LIMIT_USD } from './budgets-fns.js';

const Usd = (description: string) => Type.Number({ description });
const NullableUsd = (description: string) => Type.Union([Usd(description), Type.Null()], { description });

export const WindowSchema = Type.Object({
  start: Type.String({ description: 'Start of the window (UTC; for a task, its created_at).' }),
  end: Type.Union([Type.String(), Type.Null()], {
    description: 'End of the window, exclusive (UTC); null for a task, whose window never ends.',
  }),
  limit_usd: NullableUsd('The limit of this window in USD; null without one.'),
  spent_usd: Usd('Sum of cost_usd of the scope’s call records created in the window, to the nano-dollar.'),
  remaining_usd: NullableUsd('max(0, limit − spent); null without a limit.'),
  exceeded: Type.Boolean({ description: 'The limit is reached (spent ≥ limit): calls of this scope are refused.' }),
});
export type WindowView = Static<typeof WindowSchema>;

const limit = (what: string) =>
  Type.Union([Type.Number({ minimum: 0, maximum: MAX_LIMIT_USD }), Type.Null()], {
    description: `${what} in USD (0–1,000,000, rounded to the nearest nano-dollar); null is no limit.`,
  });
const monthly = limit('Spending limit per UTC calendar month');
const daily = limit('Spending limit per UTC calendar day of all the agent’s tasks');
const perTask = limit('Spending limit of each task of the agent over its whole life');

const Scope = (scope: 'account' | 'platform_key' | 'agent' | 'task') =>
  Type.Literal(scope, { description: 'Whose spending the budget limits.' });
const Id = Type.String({ pattern: UuidSchema.pattern, description: 'The platform key’s, agent’s or task’s uuid.' });
const Limits = { description: 'The limits of this scope in USD; null is no limit.' };
const Windows = { description: 'The current window of each limit, with the spend committed in it.' };

export const BudgetSchema = Type.Union(
  [
    Type.Object({
      scope: Scope('account'),
      id: Type.Null({ description: 'Null: the account is the workspace itself.' }),
      limits: Type.Object({ monthly_usd: monthly }, Limits),
      windows: Type.Object({ month: WindowSchema }, Windows),
    }),
    Type.Object({
      scope: Scope('platform_key'),
      id: Id,
      limits: Type.Object({ monthly_usd: monthly }, Limits),
      windows: Type.Object({ month: WindowSchema }, Windows),
    }),
    Type.Object({
      scope: Scope('agent'),
      id: Id,
      limits: Type.Object({ daily_usd: daily, per_task_usd: perTask }, Limits),
      windows: Type.Object({ day: WindowSchema }, Windows),
    }),
    Type.Object({
      scope: Scope('task'),
      id: Id,
      limits: Type.Object({ per_task_usd: perTask }, Limits),
      windows: Type.Object({ task: WindowSchema }, Windows),
    }),
  ],
  {
    title: 'Budget',
    description:
      'A spending limit on one scope over its window (UTC), with the spend committed at the moment of the request. Amounts are JSON numbers of USD, exact multiples of 1e-9.',
  },
);
export type BudgetView = Static<typeof BudgetSchema>;

export const BudgetListReply = Type.Object({
  budgets: Type.Array(BudgetSchema, {
    description:
      'The account’s budget first (always), then every agent and every platform key (revoked ones included) with at least one limit, each group by ascending uuid.',
  }),
});

export const AccountPatch = StrictObject({ monthly_usd: Type.Optional(monthly) });
export const KeyPatch = StrictObject({ monthly_usd: Type.Optional(monthly) });
export const AgentPatch = StrictObject({ daily_usd: Type.Optional(daily), per_task_usd: Type.Optional(perTask) });
/** Any scope's PATCH body, as the service takes it. */
export type LimitsPatch = { monthly_usd?: number | null; daily_usd?: number | null; per_task_usd?: number | null };

export const AgentBudgetParams = Type.Object({ agentId: UuidSchema });
export const KeyBudgetParams = Type.Object({ keyUuid: UuidSchema });
export const TaskBudgetParams = Type.Object({ taskId: UuidSchema });
