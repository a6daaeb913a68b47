import type { Db } from '../../db/connect.js';
import { afterCommit } from '../../db/transactions.js';
import type { Clock } from '../../lib/time.js';
import type { Runtime } from '../agents/agents-schemas.js';
import type { Lifecycle } from '../tasks/lifecycle.js';
import type { Notifier } from '../tasks/notifier.js';
import type { WaitingAgent } from '../tasks/queue-repo.js';
import type { TaskRecord, TasksRepo } from '../tasks/tasks-repo.js';
import type { TaskWriter } from '../tasks/tasks-writer.js';
import { runtimesRepo } from './runtimes-repo.js';
import { ABORT, type TaskRunner } from './task-runner.js';

/** The internal lease of a task the service runs; renewed every third of it while the call runs. */
export const PUSH_LEASE_SECONDS = 60;
const AGENTS_PER_PASS = 500;
/** How long an agent seen to be a worker is believed to be one. */
const WORKER_MEMORY_MS = 30_000;

/**
 * The lease a run holds: an http agent's `lease_seconds` (also the lease after its 202, so a
 * crashed instance's push comes back as soon as an abandoned 202 would), else the default.
 */
export function leaseSecondsOf(runtime: Runtime): number {
  return runtime.type === 'http' ? (runtime.lease_seconds ?? PUSH_LEASE_SECONDS) : PUSH_LEASE_SECONDS;
}

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * Hands queued tasks of push-runtime agents (those `isPush` names: openai, http, a2a) to their
 * runtime: by priority then age, while fewer than the agent's `concurrency` are held. Claims go
 * through the lifecycle's `claim`, as a worker's do, so each task runs once across instances. Woken by task changes in this process, and by polling for work
 * other instances queued. A run in flight is aborted when its task is cancelled or times out,
 * on this instance or another (the notifier carries the change).
 */
export function createDispatcher(deps: {
  db: Db;
  lifecycle: Pick<Lifecycle, 'claim'>;
  /** The tasks room's reads: which agents have work, a task's status now. */
  queue: Pick<TasksRepo, 'agentsWithWork' | 'statusOf'>;
  writer: Pick<TaskWriter, 'onChange'>;
  notifier: Pick<Notifier, 'subscribe'>;
  runner: TaskRunner;
  /** Whether the service runs tasks of this runtime type itself. */
  isPush: (type: Runtime['type']) => boolean;
  /** The runtime as the runner uses it (header values in clear). */
  openRuntime: (runtime: Runtime) => Runtime;
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
  // Worker agents seen lately (until when to believe it): their tasks' changes wake nothing, so a
  // submit to a worker agent costs the dispatcher no query. Agents woken for whose runtime is not
  // known yet are looked up after the pass. A runtime changed by PATCH within WORKER_MEMORY_MS is
  // still served by the periodic pass.
  const workerUntil = new Map<string, number>();
  let woken = new Set<string>();

  /** Claims what the agent may run now (as many as its concurrency allows), in one transaction. */
  async function claimFor(agent: WaitingAgent): Promise<Array<{ task: TaskRecord; runtime: Runtime }>> {
    const { runtime, tasks } = await db.transaction((trx) =>
      deps.lifecycle.claim(trx, agent.uuid, Number.POSITIVE_INFINITY, {
        accepts: (stored) => deps.isPush(stored.type),
        lease: (stored) => ({ leaseSeconds: leaseSecondsOf(stored), workerId: `runtime:${stored.type}` }),
        respectBackoff: true,
      }),
    );
    if (!runtime || tasks.length === 0) return [];
    const open = deps.openRuntime(runtime);
    return tasks.map((task) => ({ task, runtime: open }));
  }

  /** Aborts the run of a task that changed elsewhere (another instance) once it is no longer ours. */
  async function recheck(task: TaskRecord, controller: AbortController) {
    if (controller.signal.aborted) return;
    const now = await deps.queue.statusOf(db.kysely, task.uuid);
    if (now?.status === 'cancelled' || now?.status === 'failed') controller.abort(ABORT.stopped);
    else if (now?.status !== 'running' || now.lease_id !== task.leaseId) controller.abort(ABORT.lost);
  }

  function start(task: TaskRecord, runtime: Runtime): Promise<void> {
    const controller = new AbortController();
    inFlight.set(task.uuid, controller);
    const unsubscribe = deps.notifier.subscribe('task', task.uuid, () => {
      recheck(task, controller).catch((err) => deps.log.warn({ err, task: task.uuid }, 'push run recheck failed'));
    });
    return deps.runner.run(task, runtime, controller).finally(() => {
      unsubscribe();
      inFlight.delete(task.uuid);
    });
  }

  /** One look for work; returns the runs it started (a held slot may free up meanwhile). */
  async function lookOnce(): Promise<Array<Promise<void>>> {
    const runs: Array<Promise<void>> = [];
    const asked = woken;
    woken = new Set();
    const agents = await deps.queue.agentsWithWork(db.kysely, db.dialect, AGENTS_PER_PASS);
    for (const agent of agents) {
      asked.delete(agent.uuid);
      if (!deps.isPush(agent.runtime.type)) continue;
      workerUntil.delete(agent.uuid);
      for (const { task, runtime } of await claimFor(agent)) runs.push(start(task, runtime));
    }
    if (asked.size > 0) {
      if (workerUntil.size > 10_000) workerUntil.clear();
      const until = deps.clock.now() + WORKER_MEMORY_MS;
      for (const { uuid, type } of await runtimesRepo.runtimeTypes(db.kysely, [...asked].slice(0, 500))) {
        if (!deps.isPush(type)) workerUntil.set(uuid, until);
      }
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
    const agentUuid = event.task.agentUuid;
    if (event.task.ready && (workerUntil.get(agentUuid) ?? 0) <= deps.clock.now()) {
      woken.add(agentUuid);
      afterCommit(event.trx, schedule);
    }
    if (event.task.status === 'cancelled' || event.task.status === 'failed') {
      const uuid = event.task.uuid;
      afterCommit(event.trx, () => inFlight.get(uuid)?.abort(ABORT.stopped));
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
      for (const controller of inFlight.values()) controller.abort(ABORT.shutdown);
      await pass;
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
