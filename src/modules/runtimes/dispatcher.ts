import type { Db } from '../../db/connect.js';
import { afterCommit } from '../../db/transactions.js';
import type { EventHub } from '../../lib/event-hub.js';
import type { Log } from '../../lib/log.js';
import { createLoop } from '../../lib/loop.js';
import type { Notifier } from '../../lib/notifier.js';
import type { Clock } from '../../lib/time.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { Runtime } from '../agents/runtime-schemas.js';
import type { Lifecycle } from '../tasks/lifecycle/lifecycle.js';
import type { QueueRepo, WaitingAgent } from '../tasks/queue/queue-repo.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import { ABORT, type TaskRunner } from './task-runner.js';

/** The internal lease of a task the service runs; renewed every third of it while the call runs. */
export const PUSH_LEASE_SECONDS = 60;
const AGENTS_PER_PASS = 500;
/** How long an agent seen to be a worker is believed to be one. */
const WORKER_MEMORY_MS = 30_000;

/**
 * Hands queued tasks of push-runtime agents (those `isPush` names: openai, http, a2a) to their
 * runtime: by priority then age, while fewer than the agent's `concurrency` are held. Claims go
 * through the lifecycle's `claim`, as a worker's do, so each task runs once across instances. Woken by task changes in this process, and by polling for work
 * other instances queued. A run in flight is aborted when its task is cancelled or times out,
 * on this instance or another (the notifier carries the change).
 */
export function createPushDispatcher(deps: {
  db: Db;
  lifecycle: Pick<Lifecycle, 'claim'>;
  /** The tasks room's reads: which agents have work, a task's status now. */
  queue: Pick<QueueRepo, 'agentsWithWork' | 'statusOf'>;
  events: Pick<EventHub, 'on'>;
  notifier: Pick<Notifier, 'subscribe'>;
  runner: TaskRunner;
  /** Whether the service runs tasks of this runtime type itself. */
  isPush: (type: Runtime['type']) => boolean;
  /** The lease a run of an agent with this runtime holds. */
  leaseSeconds: (runtime: Runtime) => number;
  /** The runtime as the runner uses it (header values in clear). */
  openRuntime: (runtime: Runtime) => Runtime;
  clock: Clock;
  intervalMs: number;
  /** Runs of one account (all its agents) in flight at once on this instance. */
  perAccount: number;
  /**
   * How many of `n` runs of the agent its rate limits admit now (each counted as its model call);
   * `release` takes back admitted runs that found no task. Absent: every run is admitted.
   */
  admitRuns?: (agent: WaitingAgent, n: number) => Promise<{ admitted: number; release: (k: number) => void }>;
  log: Log;
}) {
  const { db } = deps;
  const inFlight = new Map<string, AbortController>();
  const runsOf = createAccountRuns(deps.perAccount);
  // Worker agents seen lately (until when to believe it): their tasks' changes wake nothing, so a
  // submit to a worker agent costs the dispatcher no query. Agents woken for whose runtime is not
  // known yet are looked up after the pass. A runtime changed by PATCH within WORKER_MEMORY_MS is
  // still served by the periodic pass.
  const workerUntil = new Map<string, number>();
  let woken = new Set<string>();

  /** Claims what the agent may run now (as many as its concurrency allows), in one transaction. */
  async function claimFor(agent: WaitingAgent): Promise<Array<{ task: TaskRecord; runtime: Runtime }>> {
    const free = runsOf.room(agent.workspaceUuid);
    if (free <= 0) return [];
    // A task stays queued (no attempt used) while the agent's rate limits admit no run.
    const admission = deps.admitRuns ? await deps.admitRuns(agent, free) : null;
    const room = admission ? admission.admitted : free;
    if (room <= 0) return [];
    const claimed = db.transaction((trx) =>
      deps.lifecycle.claim(trx, agent.uuid, room, {
        accepts: (stored) => deps.isPush(stored.type),
        lease: (stored) => ({ leaseSeconds: deps.leaseSeconds(stored), workerId: `runtime:${stored.type}` }),
      }),
    );
    const { runtime, tasks } = await claimed.catch((err: unknown) => {
      admission?.release(room);
      throw err;
    });
    admission?.release(room - tasks.length);
    if (!runtime || tasks.length === 0) return [];
    runsOf.add(agent.workspaceUuid, tasks.length);
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
      // An account held back by its cap has queued work that nothing else would wake.
      if (runsOf.end(task.workspaceUuid)) schedule();
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
      for (const { uuid, type } of await agentsRepo.runtimeTypes(db.kysely, [...asked].slice(0, 500))) {
        if (!deps.isPush(type)) workerUntil.set(uuid, until);
      }
    }
    return runs;
  }

  // One look at a time, and one more if woken during it; a periodic look finds other instances' work.
  const loop = createLoop({
    name: 'push dispatcher pass',
    intervalMs: deps.intervalMs,
    run: lookOnce,
    log: deps.log,
    immediate: true,
  });
  const schedule = () => loop.nudge();

  // Wake-ups: a task became claimable (submitted, answered, retried); cancel or timeout aborts its call.
  deps.events.on('task:changed', (event) => {
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
    /** Runs in flight on this instance, and accounts whose cap holds back their queued tasks (metrics). */
    stats: () => ({ inFlight: inFlight.size, accountsAtCap: runsOf.atCap() }),
    /** One pass for tests: claims what may run and waits for those runs to finish. */
    async runOnce(): Promise<number> {
      const runs = await lookOnce();
      await Promise.all(runs);
      return runs.length;
    },
    /** A retried task may run after `delayMs`: look then. */
    wakeAfter(delayMs: number) {
      loop.nudge(delayMs + 10);
    },
    start: loop.start,
    /** Stops looking and aborts the calls in flight (their leases bring the tasks back elsewhere). */
    async stop() {
      const stopping = loop.stop();
      for (const controller of inFlight.values()) controller.abort(ABORT.shutdown);
      await stopping;
    },
  };
}

export type PushDispatcher = ReturnType<typeof createPushDispatcher>;

/**
 * Push runs in flight per account on this instance, so one account's hanging runs (each agent may
 * have up to 1,000 and an account any number of agents) cannot take every run this instance makes.
 */
function createAccountRuns(perAccount: number) {
  const running = new Map<string, number>();
  return {
    /** How many more runs the account may start now. */
    room: (account: string) => perAccount - (running.get(account) ?? 0),
    add(account: string, count: number) {
      if (count > 0) running.set(account, (running.get(account) ?? 0) + count);
    },
    /** Counts one run of the account as ended; true when the account was at its cap until now. */
    end(account: string): boolean {
      const before = running.get(account) ?? 0;
      if (before <= 1) running.delete(account);
      else running.set(account, before - 1);
      return before >= perAccount;
    },
    atCap: () => [...running.values()].filter((n) => n >= perAccount).length,
  };
}
