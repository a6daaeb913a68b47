import type { ChangeCache } from '../../db/change-cache.js';
import type { Db, Executor } from '../../db/connect.js';
import { notFound } from '../../http/errors.js';
import { requirePlainName } from '../../http/names.js';
import type { SecretBox } from '../../lib/crypto.js';
import type { EventHub } from '../../lib/event-hub.js';
import { newId } from '../../lib/ids.js';
import type { Acting } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import { recordAudit } from '../audit/audit-repo.js';
import type { AgentRow, AgentsRepo } from './agents-repo.js';
import type { Agent, CreateAgentInput, PatchAgentInput } from './agents-schemas.js';
import { retryPolicyOf } from './retry-policy.js';
import { maskRuntimeHeaders, openRuntimeHeaders, sealRuntimeHeaders } from './runtime-headers.js';
import type { Runtime } from './runtime-schemas.js';

export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_TIMEOUT_SECONDS = 3600;

/**
 * What another capability does, in the same transaction, when an agent is deleted (cancel its
 * tasks, delete its triggers). Wake-ups go through `afterCommit`.
 */
declare module '../../lib/event-hub.js' {
  interface HubEvents {
    /**
     * An agent of the caller's is about to be deleted; its deleting transaction has not begun. For
     * long work in bounded transactions of its own (cancelling its open tasks in batches), which
     * `agent:deleted` then finishes atomically with the deletion.
     */
    'agent:deleting': { agentUuid: string };
    /** An agent is deleted: heard inside the deleting transaction (a throw rolls it back). */
    'agent:deleted': { trx: Executor; agentUuid: string; at: string };
    /**
     * An agent was changed (status, concurrency, runtime…): heard inside the changing transaction,
     * with the row before and after. E.g. the tasks room wakes the agent's waiting claims once an
     * agent that may now hand out more work (resumed, more concurrency) commits.
     */
    'agent:updated': { trx: Executor; before: AgentRow; after: AgentRow };
  }
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The agent as answered: runtime header values masked (they are secrets). */
function view({ workspaceUuid: _owner, ...agent }: AgentRow): Agent {
  return { ...agent, runtime: maskRuntimeHeaders(agent.runtime) };
}

/**
 * Checks a runtime against what the user owns (e.g. an `openai` runtime's provider credential).
 * @throws AppError INVALID_REQUEST naming the field.
 */
export type RuntimeCheck = (workspaceUuid: string, runtime: Runtime) => Promise<void>;

/** Agent management. Another workspace's agent is indistinguishable from a missing one. */
export function createAgentsService(deps: {
  db: Db;
  repo: AgentsRepo;
  /** Agents read outside a transaction, by uuid; only served while it hears every agent change. */
  cache: ChangeCache<AgentRow>;
  clock: Clock;
  /** Where `agent:updated`, `agent:deleting` and `agent:deleted` are announced. */
  events: Pick<EventHub, 'emit'>;
  checkRuntime: RuntimeCheck;
  /** Seals runtime header values at rest. */
  box: SecretBox;
}) {
  const { db, repo, cache } = deps;
  const now = () => iso(deps.clock.now());
  // This instance's own writes drop the entry at commit, before the caller is answered; other
  // instances hear of them through the announcement the repository makes.

  /** @throws AppError NOT_FOUND unless the agent exists, is live and belongs to the user (read with `ex`). */
  async function requireOwnedIn(ex: Executor, workspaceUuid: string, uuid: string): Promise<AgentRow> {
    const agent = await repo.findOwned(ex, workspaceUuid, uuid);
    if (!agent) throw notFound('Agent');
    return agent;
  }
  /**
   * `requireOwnedIn` outside any transaction, from the cache when it serves: for the hot paths
   * that only need the agent's current fields. A transaction that must see the row under its
   * lock reads it with `requireOwnedIn` or `findForClaim`.
   */
  async function requireOwned(workspaceUuid: string, uuid: string): Promise<AgentRow> {
    // Cached by uuid alone, so another user's cached agent is still not found.
    const agent = await cache.read(uuid, () => repo.findOwned(db.kysely, workspaceUuid, uuid));
    if (!agent || agent.workspaceUuid !== workspaceUuid) throw notFound('Agent');
    return agent;
  }

  /**
   * The names of the fields `next` changes, for the audit log. Runtimes compare with their header
   * values opened (each seal is different) and keys sorted (PostgreSQL's jsonb reorders them), so
   * re-sending the masked runtime changes nothing.
   */
  function changedFields(current: AgentRow, next: AgentRow, input: PatchAgentInput): string[] {
    const differs = (field: keyof PatchAgentInput) =>
      field === 'retry'
        ? canonicalJson(current.retry) !== canonicalJson(next.retry)
        : field === 'runtime'
          ? canonicalJson(openRuntimeHeaders(current.runtime, deps.box)) !==
            canonicalJson(openRuntimeHeaders(next.runtime, deps.box))
          : current[field] !== next[field];
    return (Object.keys(input) as Array<keyof PatchAgentInput>).filter((f) => input[f] !== undefined && differs(f));
  }

  return {
    requireOwned,
    requireOwnedIn,

    /** A new agent of the acting workspace, audited as `agent.create`. */
    async create(acting: Acting, input: CreateAgentInput): Promise<Agent> {
      const { workspaceUuid } = acting;
      requirePlainName(input.name);
      if (input.runtime) await deps.checkRuntime(workspaceUuid, input.runtime);
      const at = now();
      const agent: AgentRow = {
        uuid: newId(),
        workspaceUuid,
        name: input.name,
        description: input.description ?? null,
        status: 'active',
        runtime: input.runtime ? sealRuntimeHeaders(input.runtime, null, deps.box) : { type: 'worker' },
        concurrency: input.concurrency ?? DEFAULT_CONCURRENCY,
        concurrency_per_key: input.concurrency_per_key ?? null,
        default_timeout_seconds: input.default_timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS,
        retry: retryPolicyOf(input.retry),
        created_at: at,
        updated_at: at,
      };
      await db.transaction(async (trx) => {
        await repo.insert(trx, agent);
        await recordAudit(trx, acting, {
          action: 'agent.create',
          target: { type: 'agent', uuid: agent.uuid },
          details: { name: agent.name },
        });
      });
      return view(agent);
    },

    async get(workspaceUuid: string, uuid: string): Promise<Agent> {
      return view(await requireOwned(workspaceUuid, uuid));
    },

    async list(workspaceUuid: string, page: number, limit: number) {
      const { agents, total } = await repo.listOwned(db.kysely, workspaceUuid, (page - 1) * limit, limit);
      return { agents: agents.map(view), total };
    },

    /** Changes an agent; audited as `agent.update` naming the changed fields (no entry when none changed). */
    async patch(acting: Acting, uuid: string, input: PatchAgentInput): Promise<Agent> {
      const { workspaceUuid } = acting;
      if (input.name !== undefined) requirePlainName(input.name);
      if (input.runtime) await deps.checkRuntime(workspaceUuid, input.runtime);
      return db.transaction(async (trx) => {
        const current = await requireOwnedIn(trx, workspaceUuid, uuid);
        const next: AgentRow = {
          ...current,
          ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
          // PATCH replaces the whole runtime; a masked header value keeps the one stored.
          runtime: input.runtime ? sealRuntimeHeaders(input.runtime, current.runtime, deps.box) : current.runtime,
          // PATCH replaces the whole retry policy too: members it leaves out go back to their defaults.
          retry: input.retry !== undefined ? retryPolicyOf(input.retry) : current.retry,
          updated_at: now(),
        };
        await repo.update(trx, next);
        cache.invalidateAtCommit(trx, uuid);
        await deps.events.emit('agent:updated', { trx, before: current, after: next });
        const fields = changedFields(current, next, input);
        if (fields.length > 0) {
          await recordAudit(trx, acting, {
            action: 'agent.update',
            target: { type: 'agent', uuid },
            details: { fields },
          });
        }
        return view(next);
      });
    },

    /**
     * Deletes the agent; its open tasks are cancelled (most of them in batches just before; the
     * rest, and its triggers, in the deleting transaction).
     * Audited as `agent.delete` in the deleting transaction.
     * @throws AppError NOT_FOUND unless the agent exists, is live and belongs to the acting workspace.
     */
    async remove(acting: Acting, uuid: string): Promise<void> {
      const { workspaceUuid } = acting;
      const { name } = await requireOwnedIn(db.kysely, workspaceUuid, uuid);
      await deps.events.emit('agent:deleting', { agentUuid: uuid });
      const deleted = await db.transaction(async (trx) => {
        const at = now();
        if (!(await repo.markDeleted(trx, workspaceUuid, uuid, at))) return false;
        cache.invalidateAtCommit(trx, uuid);
        await deps.events.emit('agent:deleted', { trx, agentUuid: uuid, at });
        await recordAudit(trx, acting, { action: 'agent.delete', target: { type: 'agent', uuid }, details: { name } });
        return true;
      });
      if (!deleted) throw notFound('Agent');
    },

    /**
     * For a workspace being deleted: cancels its agents' open tasks in batches now (as `remove`
     * does), before the deleting transaction begins.
     */
    async prepareWorkspaceRemoval(workspaceUuid: string): Promise<void> {
      for (const uuid of await repo.liveUuidsOf(db.kysely, workspaceUuid)) {
        await deps.events.emit('agent:deleting', { agentUuid: uuid });
      }
    },

    /**
     * In the transaction that deletes a workspace: deletes each of its agents exactly as `remove`
     * does (the rest of their open tasks cancelled, their triggers removed), so workers' later
     * reports are refused and push runtimes get their cancel.
     */
    async removeAllOfWorkspaceIn(trx: Executor, workspaceUuid: string): Promise<void> {
      const at = now();
      for (const uuid of await repo.liveUuidsOf(trx, workspaceUuid)) {
        if (!(await repo.markDeleted(trx, workspaceUuid, uuid, at))) continue;
        cache.invalidateAtCommit(trx, uuid);
        await deps.events.emit('agent:deleted', { trx, agentUuid: uuid, at });
      }
    },
  };
}

export type AgentsService = ReturnType<typeof createAgentsService>;
