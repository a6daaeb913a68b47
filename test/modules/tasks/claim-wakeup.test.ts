import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db, Executor } from '../../../src/db/connect.js';
import { createPgListener, type PgListener } from '../../../src/db/pg-listen.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { newId } from '../../../src/lib/ids.js';
import { createNotifier, type Notifier } from '../../../src/lib/notifier.js';
import { iso } from '../../../src/lib/time.js';
import { agentsRepo } from '../../../src/modules/agents/agents-repo.js';
import { type Claimed, createLifecycle } from '../../../src/modules/tasks/lifecycle/lifecycle.js';
import { createTaskWriter } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { initial } from '../../../src/modules/tasks/lifecycle/transition-fns.js';
import { fairQueueRepo } from '../../../src/modules/tasks/queue/fair-queue-repo.js';
import { queueRepo } from '../../../src/modules/tasks/queue/queue-repo.js';
import { widensClaims } from '../../../src/modules/tasks/tasks-fns.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { createWorkerService } from '../../../src/modules/tasks/worker/worker-service.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { claimOne, claimTasks, submitTask, within } from '../../helpers/tasks.js';

const log = { warn: () => undefined };

/** The notifier without its fallback poll: a missed wake-up then shows as a wait that runs out. */
function noFallback(notifier: Notifier): Notifier {
  return { ...notifier, publish: notifier.publish, subscribe: notifier.subscribe, fallbackPollMs: Infinity };
}

/**
 * A worker service over the app's storage and the real door, writer and notifier, whose database
 * handle runs `between` (once) right after a claim's transaction committed having found nothing:
 * the moment between the claim's empty query and its wait, where a wake-up could be lost.
 */
function interleavedWorker(t: TestApp, notifier: Notifier) {
  const writer = createTaskWriter({ repo: tasksRepo, notifier, events: createEventHub() });
  const lifecycle = createLifecycle({
    repo: tasksRepo,
    queue: queueRepo,
    fair: fairQueueRepo,
    writer,
    clock: t.runtime.clock,
  });
  const state: { between: (() => Promise<void>) | null; emptyLooks: number } = { between: null, emptyLooks: 0 };
  const db: Db = {
    ...t.runtime.db,
    async transaction<T>(fn: (trx: Executor) => Promise<T>): Promise<T> {
      const out = await t.runtime.db.transaction(fn);
      const claimed = out as unknown as Partial<Claimed>;
      if (Array.isArray(claimed.tasks) && claimed.tasks.length === 0) {
        state.emptyLooks++;
        const between = state.between;
        state.between = null;
        await between?.();
      }
      return out;
    },
  };
  const worker = createWorkerService({
    db,
    lifecycle,
    agents: {
      requireOwned: async (workspaceUuid, uuid) => {
        const agent = await agentsRepo.findOwned(t.runtime.db.kysely, workspaceUuid, uuid);
        if (!agent) throw new Error('no such agent');
        return agent;
      },
    },
    notifier,
    connections: { acquire: () => () => undefined },
    clock: t.runtime.clock,
  });
  /** Inserts a queued task through the writer (what a submit does), committed before it resolves. */
  async function submit(workspaceUuid: string, agentUuid: string): Promise<string> {
    const nowMs = t.runtime.clock.now();
    const task = initial(
      {
        uuid: newId(),
        agentUuid,
        workspaceUuid,
        priority: 5,
        message: 'arrives between the look and the wait',
        metadata: {},
        callbackMode: 'poll',
        webhookUrl: null,
        timeoutSeconds: 600,
        estimatedStart: iso(nowMs),
        traceId: null,
        traceParentSpanId: null,
        concurrencyKey: null,
      },
      nowMs,
    );
    await t.runtime.db.transaction((trx) => lifecycle.create(trx, task));
    return task.uuid;
  }
  return { worker, state, submit };
}

describe.each(DATABASES)('a long-polling claim and work that arrives as it looks ($name)', (database) => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('a task committed between the empty query and the wait is claimed at once, not at the end of the wait', async () => {
    const agent = (await createAgent(t, user)).uuid;
    // SQLite's notifier has no fallback poll anyway; PostgreSQL's is taken away, so only the wake-up counts.
    const { worker, state, submit } = interleavedWorker(t, noFallback(createNotifier({ log })));
    let submitted = '';
    state.between = async () => {
      submitted = await submit(user.uuid, agent);
    };
    const started = performance.now();
    const claimed = await within(worker.claim(user.uuid, agent, { wait_seconds: 10 }), 5000, 'claim');
    expect(claimed.map((task) => task.task_id)).toEqual([submitted]);
    expect(state.emptyLooks).toBe(1);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

describe.each(DATABASES)('a long-polling claim and an agent that may now hand out work ($name)', (database) => {
  let t: TestApp;
  let user: TestUser;
  const notified: string[] = [];
  let listener: PgListener | undefined;
  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
    if (database.databaseUrl) {
      listener = createPgListener(database.databaseUrl);
      listener.listen(['taskhook_events'], {
        onMessage: (payload) => notified.push(payload),
        onState: () => undefined,
      });
    }
  });
  afterAll(async () => {
    await listener?.close();
    await t.close();
  });

  const patch = (agent: string, body: Record<string, unknown>) =>
    call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body });

  it.each([
    {
      change: 'resumed',
      prepare: async (agent: string) => expect((await patch(agent, { status: 'paused' })).statusCode).toBe(200),
      widen: { status: 'active' },
    },
    {
      change: 'given more concurrency',
      prepare: async (agent: string) => {
        await submitTask(t, user, agent, { message: 'holds the only slot', priority: 10 });
        await claimOne(t, user, agent);
      },
      widen: { concurrency: 2 },
    },
  ])('a task already queued is claimed as soon as the agent is $change', async ({ prepare, widen }) => {
    const agent = (await createAgent(t, user, { concurrency: 1 })).uuid;
    const queued = (await submitTask(t, user, agent, { message: 'already queued', priority: 1 })).task_id;
    await prepare(agent);
    const waiting = claimTasks(t, user, agent, { wait_seconds: 8 });
    await vi.waitFor(() => expect(t.app.connections.held(user.uuid, 'wait')).toBe(1), { timeout: 5000, interval: 5 });
    const seen = notified.length;
    expect((await patch(agent, widen)).statusCode).toBe(200);
    // SQLite has no fallback poll: without a wake-up the claim sleeps the whole wait.
    const claimed = await within(waiting, 3000, 'claim');
    expect(claimed.map((task) => task.task_id)).toEqual([queued]);
    // PostgreSQL's fallback poll would find it within a second anyway: the wake-up itself is announced.
    if (listener) await vi.waitFor(() => expect(notified.slice(seen)).toContain(`work:${agent}`), { timeout: 3000 });
  });

  it('a change that lets no claim take more wakes nobody', async () => {
    const agent = (await createAgent(t, user, { concurrency: 2 })).uuid;
    const seen = notified.length;
    expect((await patch(agent, { concurrency: 1, name: 'renamed' })).statusCode).toBe(200);
    expect((await patch(agent, { status: 'paused' })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(notified.slice(seen)).not.toContain(`work:${agent}`);
  });
});

describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)('the same across two instances ($name)', (database) => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('a task submitted on another instance between the empty query and the wait wakes the claim through LISTEN/NOTIFY', async () => {
    const agent = (await createAgent(t, user)).uuid;
    // This instance hears the app (the other instance) only through PostgreSQL, and never polls.
    const notifier = createNotifier({ db: t.runtime.db, log });
    try {
      const { worker, state } = interleavedWorker(t, noFallback(notifier));
      let submitted = '';
      state.between = async () => {
        // Returns only once the announcement reached this instance: the claim then waits after it.
        let heard!: () => void;
        const arrived = new Promise<void>((resolve) => {
          heard = resolve;
        });
        const unsubscribe = notifier.subscribe('work', agent, () => heard());
        submitted = (await submitTask(t, user, agent, { message: 'from the other instance' })).task_id;
        await within(arrived, 5000, 'NOTIFY');
        unsubscribe();
      };
      const claimed = await within(worker.claim(user.uuid, agent, { wait_seconds: 10 }), 5000, 'claim');
      expect(claimed.map((task) => task.task_id)).toEqual([submitted]);
      expect(state.emptyLooks).toBe(1);
    } finally {
      await notifier.close();
    }
  });
});

describe('widensClaims: which agent changes must wake its claims', () => {
  const agent = { status: 'active', concurrency: 2, concurrency_per_key: 1 as number | null };
  it.each([
    [{ status: 'paused' }, {}, true],
    [{ status: 'stopped' }, {}, true],
    [{}, { concurrency: 3 }, true],
    [{}, { concurrency_per_key: 2 }, true],
    [{}, { concurrency_per_key: null }, true],
    [{}, {}, false],
    [{}, { concurrency: 1 }, false],
    [{ concurrency_per_key: null }, {}, false],
    [{ concurrency_per_key: null }, { concurrency_per_key: null }, false],
    [{}, { status: 'paused', concurrency: 9 }, false],
    [{ status: 'paused' }, { status: 'stopped' }, false],
  ])('before %o, after %o: %s', (before, after, widens) => {
    expect(widensClaims({ ...agent, ...before }, { ...agent, ...after })).toBe(widens);
  });
});
