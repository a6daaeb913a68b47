import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../../http/error-schemas.js';
import { actingOf, principalOf } from '../../../http/guard.js';
import {
  AccountPatch,
  AgentBudgetParams,
  AgentPatch,
  BudgetListReply,
  BudgetSchema,
  KeyBudgetParams,
  KeyPatch,
  TaskBudgetParams,
} from './budgets-schemas.js';
import type { BudgetsService } from './budgets-service.js';

const tags = ['model proxy'];
/** Reads take a JWT or a platform key. */
const read = { auth: 'user' as const };
/** A budget caps the holders of platform keys, so a key must not raise its own cap: writes take a session. */
const write = { auth: 'session' as const };
const reply = { 200: BudgetSchema, ...errorResponses([400, 404]) };
const WRITE_NOTE =
  ' A session JWT only (a platform key gets 403). Fields left out keep their value; null removes a limit; a string, a negative number, more than 1,000,000 or a field of another scope is a 400 naming the field. Audited as budget.update.';

/** Budgets of the model proxy under /spotlight/budgets. */
export function budgetsRoutes(service: BudgetsService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.get(
      '/spotlight/budgets',
      {
        config: read,
        schema: {
          tags,
          summary: 'Every budget',
          description:
            'The account’s budget (always), then each agent and platform key with a limit, with the spend of their current windows.',
          response: { 200: BudgetListReply },
        },
      },
      async (request) => ({ budgets: await service.list(who(request)) }),
    );

    app.get(
      '/spotlight/budgets/account',
      {
        config: read,
        schema: {
          tags,
          summary: 'The account’s budget',
          description: 'monthly_usd over the UTC calendar month; every call of the workspace counts.',
          response: reply,
        },
      },
      async (request) => service.get(who(request), 'account', null),
    );

    app.patch(
      '/spotlight/budgets/account',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set the account’s budget',
          description: `monthly_usd.${WRITE_NOTE}`,
          body: AccountPatch,
          response: reply,
        },
      },
      async (request) => service.patch(actingOf(request), 'account', null, request.body),
    );

    app.get(
      '/spotlight/budgets/agents/:agentId',
      {
        config: read,
        schema: {
          tags,
          summary: 'An agent’s budget',
          description:
            'daily_usd over the UTC day for calls attributed to any of its tasks; per_task_usd for each task (see /spotlight/budgets/tasks/:taskId).',
          params: AgentBudgetParams,
          response: reply,
        },
      },
      async (request) => service.get(who(request), 'agent', request.params.agentId),
    );

    app.patch(
      '/spotlight/budgets/agents/:agentId',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set an agent’s budget',
          description: `daily_usd, per_task_usd. Deleting the agent deletes its budget.${WRITE_NOTE}`,
          params: AgentBudgetParams,
          body: AgentPatch,
          response: reply,
        },
      },
      async (request) => service.patch(actingOf(request), 'agent', request.params.agentId, request.body),
    );

    app.get(
      '/spotlight/budgets/platform_keys/:keyUuid',
      {
        config: read,
        schema: {
          tags,
          summary: 'A platform key’s budget',
          description: 'monthly_usd for calls the key authenticated; a revoked key’s budget is still readable.',
          params: KeyBudgetParams,
          response: reply,
        },
      },
      async (request) => service.get(who(request), 'platform_key', request.params.keyUuid),
    );

    app.patch(
      '/spotlight/budgets/platform_keys/:keyUuid',
      {
        config: write,
        schema: {
          tags,
          summary: 'Set a platform key’s budget',
          description: `monthly_usd.${WRITE_NOTE}`,
          params: KeyBudgetParams,
          body: KeyPatch,
          response: reply,
        },
      },
      async (request) => service.patch(actingOf(request), 'platform_key', request.params.keyUuid, request.body),
    );

    app.get(
      '/spotlight/budgets/tasks/:taskId',
      {
        config: read,
        schema: {
          tags,
          summary: 'A task’s budget',
          description:
            'Read only: the limit is its agent’s current per_task_usd, the window the task’s whole life (end null).',
          params: TaskBudgetParams,
          response: reply,
        },
      },
      async (request) => service.get(who(request), 'task', request.params.taskId),
    );
  };
}
