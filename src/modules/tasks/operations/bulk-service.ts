import type { Db } from '../../../db/connect.js';
import { AppError } from '../../../http/errors.js';
import type { Acting } from '../../../lib/principal.js';
import type { AgentsService } from '../../agents/agents-service.js';
import { recordAudit } from '../../audit/audit-repo.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import type { TasksRepo } from '../tasks-repo.js';
import type { TaskRef } from '../tasks-service.js';
import { bulkRepo, type Selected } from './bulk-repo.js';
import { type BulkSelection, metadataMatches, selectionOf, stillMatches } from './operations-fns.js';
import { type BulkInput, type BulkResult, MAX_BULK_TASKS } from './operations-schemas.js';
import type { TaskRerunner } from './task-rerunner.js';

/** Rows read per page of a selection (metadata is judged here, so a page may yield fewer). */
const PAGE = 500;

/** Thrown in a bulk rerun's transaction when its source changed since it was selected: rolls the rerun back. */
class Skipped extends Error {}

/**
 * Bulk cancel and rerun (docs/api.md §5.10): select the agent's matching tasks oldest first, then
 * act on each in a transaction of its own, after locking it and checking it still matches, so
 * a task another request changed meanwhile is skipped and never listed by two requests.
 */
export function createBulkService(deps: {
  db: Db;
  repo: Pick<TasksRepo, 'lockTask'>;
  agents: Pick<AgentsService, 'requireOwned'>;
  lifecycle: Pick<Lifecycle, 'applyIf'>;
  rerunner: Pick<TaskRerunner, 'submitRerun'>;
}) {
  const { db } = deps;

  /**
   * The selection, oldest first: at most `limit` tasks, and whether more existed. Metadata is
   * compared here, on the rows the other conditions select, so JSON equality is the same on both
   * databases (SQLite's JSON functions compare objects as text).
   */
  async function select(
    owner: { workspaceUuid: string; agentUuid: string },
    selection: BulkSelection,
    limit: number,
    withReruns: boolean,
  ): Promise<{ selected: Selected[]; hasMore: boolean }> {
    const selected: Selected[] = [];
    if (selection.statuses.length === 0) return { selected, hasMore: false };
    let after: { createdAt: string; uuid: string } | null = null;
    for (;;) {
      const page = await bulkRepo.page(db.kysely, owner, selection, after, PAGE, withReruns);
      for (const row of page) {
        if (!metadataMatches(row.task.metadata, selection.metadata)) continue;
        if (selected.length === limit) return { selected, hasMore: true };
        selected.push(row);
      }
      const last = page.at(-1);
      if (page.length < PAGE || !last) return { selected, hasMore: false };
      after = { createdAt: last.task.createdAt, uuid: last.task.uuid };
    }
  }

  async function cancelEach(owner: Omit<TaskRef, 'taskUuid'>, selected: Selected[], selection: BulkSelection) {
    const acted: string[] = [];
    for (const { task } of selected) {
      const ref = { ...owner, taskUuid: task.uuid };
      const applied = await db.transaction((trx) =>
        deps.lifecycle.applyIf(trx, ref, { op: 'cancel' }, (now) => stillMatches(now, selection)),
      );
      if (applied?.changed) acted.push(task.uuid);
    }
    return { acted, reruns: null };
  }

  async function rerunEach(owner: Omit<TaskRef, 'taskUuid'>, selected: Selected[], selection: BulkSelection) {
    const acted: string[] = [];
    const reruns: string[] = [];
    for (const { task, reruns: seen } of selected) {
      const ref = { ...owner, taskUuid: task.uuid };
      try {
        const { response } = await deps.rerunner.submitRerun(ref, task, null, undefined, async (trx) => {
          // Locked, the source must still match and have no rerun newer than the selection saw:
          // one made meanwhile is a concurrent bulk request's (or a single rerun's), so skip it.
          const now = await deps.repo.lockTask(trx, ref);
          if (!now || !stillMatches(now, selection)) throw new Skipped();
          if ((await bulkRepo.rerunCount(trx, task.uuid)) !== seen) throw new Skipped();
        });
        acted.push(task.uuid);
        reruns.push(response.task_id);
      } catch (err) {
        if (err instanceof Skipped || (err instanceof AppError && err.code === 'INVALID_REQUEST')) continue;
        // The agent stopped accepting tasks (or went away) meanwhile: nothing more is rerun.
        if (err instanceof AppError && (err.code === 'AGENT_UNAVAILABLE' || err.code === 'NOT_FOUND')) break;
        throw err;
      }
    }
    return { acted, reruns };
  }

  return {
    /**
     * `POST /agent/:id/tasks/bulk`: one audit entry for every answer.
     * @throws AppError NOT_FOUND (agent), INVALID_REQUEST (filter), AGENT_UNAVAILABLE and
     * RATE_LIMITED (rerun); nothing is done then.
     */
    async bulk(
      acting: Acting,
      agentUuid: string,
      input: BulkInput,
      /** Counts a rerun's requests once its tasks are known; throws RATE_LIMITED to refuse it whole. */
      charge: (tasks: number) => Promise<void> = async () => {},
    ): Promise<BulkResult> {
      const owner = { workspaceUuid: acting.workspaceUuid, agentUuid };
      const selection = selectionOf(input.action, input.filter);
      const agent = await deps.agents.requireOwned(owner.workspaceUuid, agentUuid);
      const rerun = input.action === 'rerun';
      if (rerun && agent.status !== 'active') {
        throw new AppError('AGENT_UNAVAILABLE', `Agent is ${agent.status} and does not accept tasks`);
      }
      const limit = input.limit ?? MAX_BULK_TASKS;
      const { selected, hasMore } = await select(owner, selection, limit, rerun);
      if (rerun) await charge(selected.length);
      const done = rerun ? await rerunEach(owner, selected, selection) : await cancelEach(owner, selected, selection);
      const result: BulkResult = {
        action: input.action,
        matched: selected.length,
        acted: done.acted.length,
        task_ids: done.acted,
        has_more: hasMore,
      };
      if (done.reruns) result.rerun_task_ids = done.reruns;
      await recordAudit(db.kysely, acting, {
        action: rerun ? 'task.bulk_rerun' : 'task.bulk_cancel',
        target: { type: 'agent', uuid: agentUuid },
        details: { filter: input.filter, limit, matched: result.matched, acted: result.acted },
      });
      return result;
    },
  };
}

export type BulkService = ReturnType<typeof createBulkService>;
