import type { Db } from '../../db/connect.js';
import { afterCommit } from '../../db/transactions.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentsRepo } from '../agents/agents-repo.js';
import type { OpenAiRuntime } from '../model-runtime/model-runtime-fns.js';
import type { TaskRecord, TasksRepo } from '../tasks/tasks-repo.js';
import type { TaskWriter } from '../tasks/tasks-writer.js';
import { transition } from '../tasks/transition-fns.js';
import { runtimesRepo, type WaitingAgent } from './runtimes-repo.js';
import type { TaskRunner } from './task-runner.js';

/** The internal lease of a task the service runs; renewed every third of it while the call runs. */
export const PUSH_LEASE_SECONDS = 60;
const AGENTS_PER_PASS = 500;
/** The abort reason at shutdown: the runner hands such a task back (attempt unchanged). */
export const SHUTDOWN = 'shutdown';

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * Hands queued tasks of push-runtime agents (today: `openai`) to their runtime: by priority then
 * age, while fewer than the agent's `concurrency` are held. Claims go through the task lifecycle's
 * claim transition under row locks, as a worker's do, so each task runs once across instances.
 * Woken by task changes in this process, and by polling for work other instances queued.
 */
export function createDispatcher(deps: {
  db: Db;
  tasksRepo: Pick<TasksRepo, 'countHeld'>;
  agentsRepo: Pick<AgentsRepo, 'findForClaim'>;
  writer: TaskWriter;
  runner: TaskRunner;
  clock: Clock;
  intervalMs: number;
  log: Log;
}) {
  const { db, writer } = deps;
  const inFlight = new Map<string, AbortController>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let pass: Promise<Array<Promise<void>>> | null = null;
  let again = false;
  // Which agents are pushed to, as last seen: task changes of known worker agents wake nothing.
  const isPush = new Map<string, boolean>();

  /** Claims what the agent may run now, in one transaction. */
  async function claimFor(agent: WaitingAgent): Promise<Array<{ task: TaskRecord; runtime: OpenAiRuntime }>> {
    const nowMs = deps.clock.now();
    return db.transaction(async (trx) => {
      const row = await deps.agentsRepo.findForClaim(trx, agent.uuid);
      if (row?.status !== 'active' || row.runtime.type !== 'openai') return [];
      const runtime = row.runtime;
      const free = row.concurrency - (await deps.tasksRepo.countHeld(trx, agent.uuid));
      if (free <= 0) return [];
      const out: Array<{ task: TaskRecord; runtime: OpenAiRuntime }> = [];
      for (const task of await runtimesRepo.lockDispatchable(trx, agent.uuid, free, iso(nowMs))) {
        const claim = { leaseId: newId(), leaseSeconds: PUSH_LEASE_SECONDS, workerId: `runtime:${runtime.type}` };
        const decided = transition(task, { op: 'claim', ...claim }, nowMs);
        if (decided instanceof AppError) throw decided;
        if (decided) out.push({ task: (await writer.save(trx, task, decided)).task, runtime });
      }
      return out;
    });
  }

  function start(task: TaskRecord, runtime: OpenAiRuntime): Promise<void> {
    const controller = new AbortController();
    inFlight.set(task.uuid, controller);
    return deps.runner.run(task, runtime, controller).finally(() => inFlight.delete(task.uuid));
  }

  /** One look for work; returns the runs it started (a held slot may free up meanwhile). */
  async function lookOnce(): Promise<Array<Promise<void>>> {
    const runs: Array<Promise<void>> = [];
    const agents = await runtimesRepo.agentsWithWork(db.kysely, db.dialect, AGENTS_PER_PASS);
    if (isPush.size > 10_000) isPush.clear();
    for (const agent of agents) {
      isPush.set(agent.uuid, agent.runtime.type === 'openai');
      if (agent.runtime.type !== 'openai') continue;
      for (const { task, runtime } of await claimFor(agent)) runs.push(start(task, runtime));
    }
    return runs;
  }

  /** Coalesces wake-ups: one look at a time, and one more if woken during it. */
  function look(): Promise<Array<Promise<void>>> {
    if (pass) {
      again = true;
      return pass;
    }
    pass = lookOnce()
      .catch((err) => {
        deps.log.warn({ err }, 'push dispatcher pass failed');
        return [];
      })
      .finally(() => {
        pass = null;
        if (again && !stopped) {
          again = false;
          void look();
        }
      });
    return pass;
  }

  function schedule() {
    if (!stopped) void look();
  }

  // Wake-ups: a task became claimable (submitted, answered, retried); cancel or timeout aborts its call.
  writer.onChange((event) => {
    if (event.task.ready && isPush.get(event.task.agentUuid) !== false) afterCommit(event.trx, schedule);
    if (event.task.status === 'cancelled' || event.task.status === 'failed') {
      const uuid = event.task.uuid;
      afterCommit(event.trx, () => inFlight.get(uuid)?.abort());
    }
  });

  return {
    /** One pass for tests: claims what may run and waits for those runs to finish. */
    async runOnce(): Promise<number> {
      const runs = await lookOnce();
      await Promise.all(runs);
      return runs.length;
    },
    /** A retried task may run after `delayMs`: look then. */
    wakeAfter(delayMs: number) {
      if (!stopped) setTimeout(schedule, delayMs + 10).unref();
    },
    start() {
      stopped = false;
      timer = setInterval(schedule, deps.intervalMs);
      timer.unref();
      schedule();
    },
    /** Stops looking and aborts the calls in flight (their leases bring the tasks back elsewhere). */
    async stop() {
      stopped = true;
      clearInterval(timer);
      for (const controller of inFlight.values()) controller.abort(SHUTDOWN);
      await pass;
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
