import type { Executor } from '../../../db/connect.js';
import { AppError } from '../../../http/errors.js';
import { newId } from '../../../lib/ids.js';
import { type Clock, iso } from '../../../lib/time.js';
import type { Runtime } from '../../agents/runtime-schemas.js';
import { lockFairly } from '../queue/fair-claim.js';
import type { FairQueueRepo } from '../queue/fair-queue-repo.js';
import type { QueueRepo } from '../queue/queue-repo.js';
import type { TaskRecord } from '../tasks-record.js';
import type { TasksRepo } from '../tasks-repo.js';
import { taskView } from '../tasks-view.js';
import type { SavedTask, TaskWriter } from './tasks-writer.js';
import { type Change, type NewTask, type TaskInput, transition } from './transition-fns.js';

/**
 * Which task a change is for: owner-checked (`workspaceUuid` and `agentUuid` given, as every request
 * of a user or a worker is), or by id alone (the service's own sweeps).
 */
export type TaskTarget = { workspaceUuid: string; agentUuid: string; taskUuid: string } | { taskUuid: string };

/** The task after `apply`: as saved, or as it was when the input changed nothing. */
export interface Applied extends SavedTask {
  changed: boolean;
}

/** How a claim hands tasks out. */
export interface ClaimOptions {
  /** Whether tasks of an agent with this runtime may be claimed here (the dispatcher: push runtimes only). */
  accepts?: (runtime: Runtime) => boolean;
  /** The lease and the holder's name for an agent with this runtime. */
  lease: (runtime: Runtime) => { leaseSeconds: number; workerId: string | null };
}

/**
 * A completed claim: the agent's runtime (null when nothing could be claimed) and the tasks now
 * held; when none, the earliest later instant a waiting task of the agent becomes available (a
 * long-poll claim looks again then), else null.
 */
export interface Claimed {
  runtime: Runtime | null;
  tasks: TaskRecord[];
  nextAvailableAt: string | null;
}

/**
 * The one door into the task lifecycle. Every new task, whoever creates it (a submit, a webhook
 * trigger, a schedule, A2A, MCP), is `initial` (its first state, pure) → `create` →
 * `writer.insert`. Every change of an existing task, whoever asks (a user
 * through the tasks service or A2A, a worker, a push runtime, the sweeper, agent deletion), is
 * load under a row lock → `transition` (the state table, pure) → `writer.save` (fields, event,
 * subscribers in the transaction, wake-ups after commit). Every claim is lock the agent row →
 * count held → lock claimable rows → `transition(claim)` → one batched save. Each method runs in
 * the caller's transaction `trx` and adds no round trip beyond those steps.
 */
export function createLifecycle(deps: {
  repo: Pick<TasksRepo, 'lockTask' | 'lockByUuid' | 'lockTasks'>;
  queue: Pick<QueueRepo, 'lockOpenOfAgent' | 'lockClaimable' | 'countHeld' | 'lockAgentForClaim' | 'nextAvailable'>;
  /** The statements of claiming with concurrency keys. */
  fair: FairQueueRepo;
  writer: Pick<TaskWriter, 'save' | 'saveMany' | 'insert' | 'insertMany'>;
  clock: Clock;
}) {
  const { repo, queue, writer } = deps;

  async function lock(trx: Executor, target: TaskTarget): Promise<TaskRecord | undefined> {
    return 'workspaceUuid' in target ? repo.lockTask(trx, target) : repo.lockByUuid(trx, target.taskUuid);
  }

  /**
   * Decides each (locked) task's input and saves the accepted changes together: one statement
   * per set of changed columns and one for the events, whatever the count.
   * @returns per task, in the order given, what it is now or the refusal.
   */
  async function decideAll(
    trx: Executor,
    items: Array<{ task: TaskRecord; input: TaskInput }>,
    nowMs: number,
  ): Promise<Array<Applied | AppError>> {
    const accepted: Array<{ before: TaskRecord; change: Change }> = [];
    const decisions = items.map(({ task, input }) => {
      const decided = transition(task, input, nowMs);
      if (decided && !(decided instanceof AppError)) accepted.push({ before: task, change: decided });
      return decided;
    });
    const saved = await writer.saveMany(trx, accepted);
    let next = 0;
    return items.map(({ task }, i): Applied | AppError => {
      const decided = decisions[i];
      if (decided instanceof AppError) return decided;
      if (!decided) return { task, view: taskView(task), changed: false };
      return { ...(saved[next++] as SavedTask), changed: true };
    });
  }

  async function decideOne(trx: Executor, current: TaskRecord, input: TaskInput, nowMs?: number): Promise<Applied> {
    const decided = transition(current, input, nowMs ?? deps.clock.now());
    if (decided instanceof AppError) throw decided;
    if (!decided) return { task: current, view: taskView(current), changed: false };
    return { ...(await writer.save(trx, current, decided)), changed: true };
  }

  return {
    /**
     * Writes a new task in `trx`, in the first state `initial` gave it (subscribers in `trx`, its
     * agent's workers woken after the commit). Adds no statement beyond the insert.
     */
    create: (trx: Executor, task: NewTask): Promise<void> => writer.insert(trx, task),

    /** `create` for the new tasks of one transaction in one multi-row INSERT (a batch of submits or deliveries). */
    createMany: (trx: Executor, tasks: NewTask[]): Promise<void> => writer.insertMany(trx, tasks),

    /**
     * Applies `input` to the task: loads it under a row lock in `trx`, asks the transition
     * function, saves what it decided (subscribers run in `trx`, wake-ups after its commit).
     * @param nowMs the time of the change (default: the clock now).
     * @returns the task afterwards; `changed` false when the input changed nothing (a repeat).
     * @throws AppError NOT_FOUND when there is no such task (of that owner); the transition's
     * refusal otherwise (e.g. TASK_NOT_RUNNING, TASK_NOT_CANCELLABLE, LIMIT_EXCEEDED).
     */
    async apply(trx: Executor, target: TaskTarget, input: TaskInput, nowMs?: number): Promise<Applied> {
      const current = await lock(trx, target);
      if (!current) throw new AppError('NOT_FOUND', 'Task not found');
      return decideOne(trx, current, input, nowMs);
    },

    /**
     * `apply` only when the task, once locked, still meets `when` (a bulk action's filter: a
     * task that stopped matching since it was selected is left alone).
     * @returns the task afterwards, or null when it is gone or no longer meets `when`.
     */
    async applyIf(
      trx: Executor,
      target: TaskTarget,
      input: TaskInput,
      when: (task: TaskRecord) => boolean,
      nowMs?: number,
    ): Promise<Applied | null> {
      const current = await lock(trx, target);
      if (!current || !when(current)) return null;
      return decideOne(trx, current, input, nowMs);
    },

    /**
     * `apply` for many tasks of one agent of one user, each listed once, in a constant number of
     * statements: one lock of them all (in id order), one batched save. Each task is judged on its
     * own: a refused one changes nothing and does not stop the others.
     * @returns per task id, what it is now or its refusal (AppError NOT_FOUND for an unknown one).
     */
    async applyMany(
      trx: Executor,
      owner: { workspaceUuid: string; agentUuid: string },
      items: Array<{ taskUuid: string; input: TaskInput }>,
      nowMs?: number,
    ): Promise<Map<string, Applied | AppError>> {
      const found = new Map(
        (
          await repo.lockTasks(
            trx,
            owner,
            items.map((i) => i.taskUuid),
          )
        ).map((t) => [t.uuid, t]),
      );
      const out = new Map<string, Applied | AppError>();
      const known: Array<{ task: TaskRecord; input: TaskInput }> = [];
      // Saved in id order too, as they were locked.
      for (const item of [...items].sort((a, b) => (a.taskUuid < b.taskUuid ? -1 : 1))) {
        const task = found.get(item.taskUuid);
        if (task) known.push({ task, input: item.input });
        else out.set(item.taskUuid, new AppError('NOT_FOUND', 'Task not found'));
      }
      const results = await decideAll(trx, known, nowMs ?? deps.clock.now());
      for (const [i, { task }] of known.entries()) out.set(task.uuid, results[i] as Applied | AppError);
      return out;
    },

    /**
     * Cancels up to `limit` open tasks of an agent (locked in id order) in `trx`, as `apply` with
     * `cancel` would each. @returns how many open tasks were found (fewer than `limit`: none left).
     */
    async cancelOpenOfAgent(trx: Executor, agentUuid: string, limit: number, nowMs?: number): Promise<number> {
      const open = await queue.lockOpenOfAgent(trx, agentUuid, limit);
      await decideAll(
        trx,
        open.map((task) => ({ task, input: { op: 'cancel' } })),
        nowMs ?? deps.clock.now(),
      );
      return open.length;
    },

    /**
     * Claims up to `max` tasks of an active agent in priority-then-age order, within its
     * `concurrency`: locks the agent row (so claims of one agent take turns; PostgreSQL
     * `FOR NO KEY UPDATE`, which a submit's foreign key check does not wait for), counts what is
     * held, locks claimable rows skipping those another claim holds, applies `claim` to each
     * and saves them together. Nothing is claimed for a deleted, paused or not-`accepts`ed agent.
     * An agent with keyed work hands out in the fair order of concurrency keys (`lockFairly`).
     */
    async claim(trx: Executor, agentUuid: string, max: number, opts: ClaimOptions): Promise<Claimed> {
      const agent = await queue.lockAgentForClaim(trx, agentUuid);
      if (agent?.status !== 'active' || (opts.accepts && !opts.accepts(agent.runtime))) {
        return { runtime: null, tasks: [], nextAvailableAt: null };
      }
      const limit = Math.min(max, agent.concurrency - (await queue.countHeld(trx, agentUuid)));
      if (limit <= 0) return { runtime: agent.runtime, tasks: [], nextAvailableAt: null };
      const nowMs = deps.clock.now();
      // Never handed out before `available_at` (a delayed start, a retry's wait).
      const readyBy = iso(nowMs);
      const lease = opts.lease(agent.runtime);
      const accepted: Array<{ before: TaskRecord; change: Change }> = [];
      const claimable = agent.keyed
        ? await lockFairly(
            deps.fair,
            trx,
            { uuid: agentUuid, concurrencyPerKey: agent.concurrencyPerKey },
            limit,
            readyBy,
          )
        : await queue.lockClaimable(trx, agentUuid, limit, readyBy);
      for (const task of claimable) {
        const decided = transition(task, { op: 'claim', leaseId: newId(), ...lease }, nowMs);
        if (decided instanceof AppError) throw decided;
        if (decided) accepted.push({ before: task, change: decided });
      }
      const saved = await writer.saveMany(trx, accepted);
      const nextAvailableAt = saved.length === 0 ? await queue.nextAvailable(trx, agentUuid, readyBy) : null;
      return { runtime: agent.runtime, tasks: saved.map((s) => s.task), nextAvailableAt };
    },
  };
}

export type Lifecycle = ReturnType<typeof createLifecycle>;
