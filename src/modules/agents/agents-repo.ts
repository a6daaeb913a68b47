import type { Selectable } from 'kysely';
import { changeChannel } from '../../db/change-cache.js';
import type { Executor } from '../../db/connect.js';
import type { AgentsTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { prepareQuery } from '../../db/prepared.js';
import { lockRows } from '../../db/transactions.js';
import type { Agent, AgentStatus } from './agents-schemas.js';
import { DEFAULT_RETRY, type RetryPolicy } from './retry-policy.js';
import type { Runtime } from './runtime-schemas.js';

export interface AgentRow extends Agent {
  workspaceUuid: string;
}

function toAgent(row: Selectable<AgentsTable>): AgentRow {
  return {
    uuid: row.uuid,
    workspaceUuid: row.workspace_uuid,
    name: row.name,
    description: row.description,
    status: row.status as AgentStatus,
    runtime: fromDbJson<Runtime>(row.runtime),
    concurrency: row.concurrency,
    concurrency_per_key: row.concurrency_per_key,
    default_timeout_seconds: row.default_timeout_seconds,
    retry: row.retry === null ? DEFAULT_RETRY : fromDbJson<RetryPolicy>(row.retry),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Every change to a live agent, by agent uuid, announced in the transaction that writes it (the
 * agent caches of every instance drop it; see `changeChannel`).
 */
export const agentChanges = changeChannel('taskhook_agents');

// On the path of every submit, built once (see prepareQuery).
const ownedAgent = prepareQuery(2, (ex, uuid: string, workspaceUuid: string) =>
  ex
    .selectFrom('agents')
    .selectAll()
    .where('uuid', '=', uuid)
    .where('workspace_uuid', '=', workspaceUuid)
    .where('deleted_at', 'is', null),
);

/** The only code that touches the agents table. Deleted agents are invisible to every read. */
export const agentsRepo = {
  insert(ex: Executor, agent: AgentRow) {
    return withDbErrors(
      ex
        .insertInto('agents')
        .values({
          uuid: agent.uuid,
          workspace_uuid: agent.workspaceUuid,
          name: agent.name,
          description: agent.description,
          status: agent.status,
          runtime: toDbJson(agent.runtime),
          concurrency: agent.concurrency,
          concurrency_per_key: agent.concurrency_per_key,
          default_timeout_seconds: agent.default_timeout_seconds,
          retry: toDbJson(agent.retry),
          created_at: agent.created_at,
          updated_at: agent.updated_at,
          deleted_at: null,
        })
        .execute(),
    );
  },

  /** The workspace's live agent, or undefined when it does not exist, is deleted or is another workspace's. */
  async findOwned(ex: Executor, workspaceUuid: string, uuid: string): Promise<AgentRow | undefined> {
    const [row] = await withDbErrors(ownedAgent(ex, uuid, workspaceUuid));
    return row && toAgent(row);
  },

  /**
   * Status and concurrency of a live agent, row-locked for `trx`: the lock serialises the
   * transactions that count an agent's tasks or triggers before adding one.
   */
  async findForClaim(trx: Executor, uuid: string) {
    const query = trx
      .selectFrom('agents')
      .select(['status', 'concurrency', 'runtime'])
      .where('uuid', '=', uuid)
      .where('deleted_at', 'is', null);
    // Claims of one agent take turns on its row; its submits' foreign key checks do not wait.
    const row = await withDbErrors(lockRows(trx, query, { noKeyUpdate: true }).executeTakeFirst());
    return row && { status: row.status, concurrency: row.concurrency, runtime: fromDbJson<Runtime>(row.runtime) };
  },

  async listOwned(ex: Executor, workspaceUuid: string, offset: number, limit: number) {
    const base = ex.selectFrom('agents').where('workspace_uuid', '=', workspaceUuid).where('deleted_at', 'is', null);
    const [rows, count] = await Promise.all([
      withDbErrors(
        base.selectAll().orderBy('created_at', 'desc').orderBy('uuid', 'desc').offset(offset).limit(limit).execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { agents: rows.map(toAgent), total: Number(count.n) };
  },

  async update(ex: Executor, agent: AgentRow) {
    await agentChanges.announce(ex, agent.uuid);
    return withDbErrors(
      ex
        .updateTable('agents')
        .set({
          name: agent.name,
          description: agent.description,
          status: agent.status,
          runtime: toDbJson(agent.runtime),
          concurrency: agent.concurrency,
          concurrency_per_key: agent.concurrency_per_key,
          default_timeout_seconds: agent.default_timeout_seconds,
          retry: toDbJson(agent.retry),
          updated_at: agent.updated_at,
        })
        .where('uuid', '=', agent.uuid)
        .execute(),
    );
  },

  /** The uuids of the workspace's live agents (a workspace being deleted). */
  async liveUuidsOf(ex: Executor, workspaceUuid: string): Promise<string[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('agents')
        .select('uuid')
        .where('workspace_uuid', '=', workspaceUuid)
        .where('deleted_at', 'is', null)
        .execute(),
    );
    return rows.map((r) => r.uuid);
  },

  /** The names and runtimes of the workspace's live agents (who names a route or a credential). */
  async liveRuntimes(ex: Executor, workspaceUuid: string): Promise<Array<{ name: string; runtime: Runtime }>> {
    const rows = await withDbErrors(
      ex
        .selectFrom('agents')
        .select(['name', 'runtime'])
        .where('workspace_uuid', '=', workspaceUuid)
        .where('deleted_at', 'is', null)
        .execute(),
    );
    return rows.map((r) => ({ name: r.name, runtime: fromDbJson<Runtime>(r.runtime) }));
  },

  /** The runtime type of each of these agents (deleted ones included). */
  async runtimeTypes(ex: Executor, agentUuids: string[]): Promise<Array<{ uuid: string; type: Runtime['type'] }>> {
    if (agentUuids.length === 0) return [];
    const rows = await withDbErrors(
      ex.selectFrom('agents').select(['uuid', 'runtime']).where('uuid', 'in', agentUuids).execute(),
    );
    return rows.map((r) => ({ uuid: r.uuid, type: fromDbJson<Runtime>(r.runtime).type }));
  },

  /** An agent's runtime as stored (deleted agents included), or undefined. */
  async runtimeOf(ex: Executor, agentUuid: string): Promise<Runtime | undefined> {
    const row = await withDbErrors(
      ex.selectFrom('agents').select('runtime').where('uuid', '=', agentUuid).executeTakeFirst(),
    );
    return row && fromDbJson<Runtime>(row.runtime);
  },

  /** Names of the workspace's live agents whose runtime uses this provider credential (it cannot be deleted). */
  async namesUsingCredential(ex: Executor, workspaceUuid: string, credentialUuid: string): Promise<string[]> {
    const agents = await agentsRepo.liveRuntimes(ex, workspaceUuid);
    return agents
      .filter(
        (a) =>
          (a.runtime as { provider_credential_uuid?: unknown } | null)?.provider_credential_uuid === credentialUuid,
      )
      .map((a) => a.name);
  },

  /** Every agent's stored runtime, deleted agents included (`taskhook secret reseal`). */
  async allRuntimes(ex: Executor): Promise<Array<{ uuid: string; runtime: unknown }>> {
    const rows = await withDbErrors(ex.selectFrom('agents').select(['uuid', 'runtime']).execute());
    return rows.map((r) => ({ uuid: r.uuid, runtime: fromDbJson<unknown>(r.runtime) }));
  },

  /** Stores an agent's runtime as given (its header values re-sealed: `taskhook secret reseal`). */
  async replaceRuntime(ex: Executor, uuid: string, runtime: unknown): Promise<void> {
    await withDbErrors(
      ex
        .updateTable('agents')
        .set({ runtime: toDbJson(runtime) })
        .where('uuid', '=', uuid)
        .execute(),
    );
  },

  async markDeleted(ex: Executor, workspaceUuid: string, uuid: string, now: string): Promise<boolean> {
    await agentChanges.announce(ex, uuid);
    const result = await withDbErrors(
      ex
        .updateTable('agents')
        .set({ deleted_at: now, updated_at: now })
        .where('uuid', '=', uuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .where('deleted_at', 'is', null)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) > 0;
  },
};

export type AgentsRepo = typeof agentsRepo;
