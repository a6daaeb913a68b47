import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beforeCommit } from '../../../src/db/transactions.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { createLifecycle } from '../../../src/modules/tasks/lifecycle/lifecycle.js';
import { createTaskWriter } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { fairQueueRepo } from '../../../src/modules/tasks/queue/fair-queue-repo.js';
import { queueRepo } from '../../../src/modules/tasks/queue/queue-repo.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, POSTGRES_ONLY, POSTGRES_URL } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { listen, type SseEvent, sseReader } from '../../helpers/streams.js';
import {
  cancelTask,
  claimOne,
  getTask,
  reportComplete,
  reportInputRequest,
  reportProgress,
  sendMessage,
  submitTask,
} from '../../helpers/tasks.js';
import { captureLog, createWorkspace, join, WORKSPACE_HEADER } from '../workspaces/workspace-helpers.js';

/** Opens GET /agent/:id/tasks/events on `base` with `headers` (a credential, maybe Last-Event-ID). */
async function openAgentStream(base: string, agent: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(`${base}/agent/${agent}/tasks/events`, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  return { res, close: () => controller.abort() };
}

/** Ids are integers that only go up (after `after`, when given). */
function expectIncreasing(events: SseEvent[], after = 0) {
  let previous = after;
  for (const { id } of events) {
    expect(Number.isInteger(id)).toBe(true);
    expect(id).toBeGreaterThan(previous);
    previous = id;
  }
}

describe.each(DATABASES)('the agent-wide task stream on $name', (database) => {
  let t: TestApp;
  let base: string;
  let logged: Array<Record<string, unknown>>;
  const closers: Array<() => void> = [];

  beforeAll(async () => {
    t = await buildTestApp(database);
    logged = captureLog(t);
    base = await listen(t);
  });
  afterAll(async () => {
    for (const close of closers) close();
    await t.close();
  });

  async function stream(headers: Record<string, string>, agent: string, lastEventId?: number) {
    const { res, close } = await openAgentStream(base, agent, {
      ...headers,
      ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }),
    });
    closers.push(close);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    if (!res.body) throw new Error('no body');
    const events = sseReader(res.body);
    return {
      events,
      close,
      /** The next `n` events. */
      async take(n: number): Promise<SseEvent[]> {
        const out: SseEvent[] = [];
        while (out.length < n) {
          const event = await events.next();
          if (!event) throw new Error(`the stream ended after ${out.length} of ${n} events`);
          out.push(event);
        }
        return out;
      },
    };
  }
  const keyOf = (user: TestUser) => ({ 'x-api-key': user.key });

  it('carries every change of every task of the agent from when it opened, each the GET body of then', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const sibling = (await createAgent(t, user)).uuid;
    // Before the stream opens: no backlog without Last-Event-ID.
    const earlier = (await submitTask(t, user, agent, { message: 'before' })).task_id;
    expect((await cancelTask(t, user, agent, earlier)).statusCode).toBe(200);

    const s = await stream(keyOf(user), agent);
    const taskId = (await submitTask(t, user, agent, { message: 'watch me' })).task_id;
    const [created] = await s.take(1);
    expect(created?.event).toBe('task');
    expect(created?.data).toEqual(await getTask(t, user, agent, taskId));

    await submitTask(t, user, sibling, { message: 'not this agent' });
    const claim = await claimOne(t, user, agent);
    expect(claim.task_id).toBe(taskId);
    const [running] = await s.take(1);
    expect(running?.data).toEqual(await getTask(t, user, agent, taskId));
    await reportProgress(t, user, agent, taskId, { lease_id: claim.lease_id, ...progressOf(1) });
    const [progress] = await s.take(1);
    expect(progress?.data).toMatchObject({ status: 'running', progress: progressOf(1) });
    await reportInputRequest(t, user, agent, taskId, claim.lease_id, 'which branch?');
    const [asked] = await s.take(1);
    expect(asked?.data).toEqual(await getTask(t, user, agent, taskId));
    await sendMessage(t, user, agent, taskId, 'main');
    const [answered] = await s.take(1);
    expect(answered?.data).toMatchObject({ status: 'running' });
    expect(answered?.data.messages.map((m) => m.content)).toEqual(['watch me', 'which branch?', 'main']);
    const second = await claimOne(t, user, agent);
    await reportComplete(t, user, agent, taskId, second.lease_id, { summary: 'done' });
    const rest: SseEvent[] = [];
    while (rest.at(-1)?.data.status !== 'completed') rest.push(...(await s.take(1)));
    expect(rest.at(-1)?.data).toEqual(await getTask(t, user, agent, taskId));

    const all = [created, running, progress, asked, answered, ...rest] as SseEvent[];
    expect(all.every((e) => e.event === 'task' && e.data.task_id === taskId)).toBe(true);
    expectIncreasing(all);
    // The earlier task's events (ids 1 and 2 of this agent) came before the stream opened.
    expect(created?.id).toBe(3);
    // The conversation as it was at each change, not as it is now.
    expect(all.map((e) => e.data.messages.length).slice(0, 5)).toEqual([1, 1, 1, 2, 3]);
  });

  it('resumes with Last-Event-ID: the events after that id, then live ones; past the newest: from the newest', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const a = await stream(keyOf(user), agent);
    const x = (await submitTask(t, user, agent, { message: 'x' })).task_id;
    const y = (await submitTask(t, user, agent, { message: 'y' })).task_id;
    const [first, second] = await a.take(2);
    a.close();
    expect(new Set([first?.data.task_id, second?.data.task_id])).toEqual(new Set([x, y]));

    // While nobody listens.
    expect((await cancelTask(t, user, agent, x)).statusCode).toBe(200);
    expect((await sendMessage(t, user, agent, y, 'more')).statusCode).toBe(200);

    const b = await stream(keyOf(user), agent, first?.id);
    const missed = await b.take(3);
    expect(missed.map((e) => [e.data.task_id, e.data.status, e.data.messages.length])).toEqual([
      [second?.data.task_id, 'queued', 1],
      [x, 'cancelled', 1],
      [y, 'queued', 2],
    ]);
    expect(missed[0]).toEqual(second);
    expect((await cancelTask(t, user, agent, y)).statusCode).toBe(200);
    const [live] = await b.take(1);
    expect(live?.data).toMatchObject({ task_id: y, status: 'cancelled' });
    expectIncreasing([...missed, live as SseEvent], first?.id);

    // From 0: everything kept, the same history.
    const c = await stream(keyOf(user), agent, 0);
    expect(await c.take(5)).toEqual([first, ...missed, live]);

    // An id past the newest waits for the next change, which it gets with the next id.
    const d = await stream(keyOf(user), agent, 999_999);
    const z = (await submitTask(t, user, agent, { message: 'z' })).task_id;
    const [next] = await d.take(1);
    expect(next).toMatchObject({ id: (live?.id as number) + 1, data: { task_id: z, status: 'queued' } });
  });

  it('numbers in commit order: a change that took its id and commits late holds back the later ones', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const x = (await submitTask(t, user, agent, { message: 'x' })).task_id;
    const y = (await submitTask(t, user, agent, { message: 'y' })).task_id;
    const s = await stream(keyOf(user), agent);

    // A cancel of x through the real door, held after it took its number and before its commit.
    const writer = createTaskWriter({
      repo: tasksRepo,
      notifier: createNotifier({ db: t.runtime.db, log: t.runtime.logger }),
      events: createEventHub(),
    });
    const lifecycle = createLifecycle({
      repo: tasksRepo,
      queue: queueRepo,
      fair: fairQueueRepo,
      writer,
      clock: t.runtime.clock,
    });
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let numbered = () => {};
    const tookNumber = new Promise<void>((resolve) => {
      numbered = resolve;
    });
    const late = t.runtime.db.transaction(async (trx) => {
      await lifecycle.apply(trx, { workspaceUuid: user.uuid, agentUuid: agent, taskUuid: x }, { op: 'cancel' });
      // Scheduled after the writer's: runs once x's event is written and numbered.
      beforeCommit(trx, async () => {
        numbered();
        await held;
      });
    });
    await tookNumber;
    // A later change of another task of the agent, through the API.
    const cancelY = cancelTask(t, user, agent, y);
    if (database.databaseUrl) {
      // On PostgreSQL it waits for the agent's counter, which the held transaction has.
      while (!(await waitsOnCounter(t))) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    release();
    await late;
    expect((await cancelY).statusCode).toBe(200);

    const [first, second] = await s.take(2);
    expect([first?.data.task_id, second?.data.task_id]).toEqual([x, y]);
    expect(second?.id).toBe((first?.id as number) + 1);
    const replay = await stream(keyOf(user), agent, (first?.id as number) - 1);
    expect(await replay.take(2)).toEqual([first, second]);
  });

  it('refuses a Last-Event-ID that is not a decimal integer', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    for (const bad of ['abc', '-1', '1.5', '0x10', '']) {
      const { res } = await openAgentStream(base, agent, { ...keyOf(user), 'last-event-id': bad });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; details: { field: string } } };
      expect(body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'Last-Event-ID' } });
    }
  });

  it("is 404 for another workspace's agent, a deleted or unknown one; 401 without a credential", async () => {
    const user = await createUser(t);
    const stranger = await createUser(t);
    const theirs = (await createAgent(t, stranger)).uuid;
    const deleted = (await createAgent(t, user)).uuid;
    expect((await call(t.app, 'DELETE', `/agent/${deleted}`, { token: user.token })).statusCode).toBeLessThan(300);
    for (const agent of [theirs, deleted, '0190b7a2-0000-7000-8000-000000000000']) {
      const { res } = await openAgentStream(base, agent, keyOf(user));
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
    }
    const anonymous = await openAgentStream(base, theirs, {});
    expect(anonymous.res.status).toBe(401);
    await anonymous.res.body?.cancel();
  });

  it("lets a workspace's viewer follow it, and ends once the agent is deleted, after its last cancellations", async () => {
    const [owner, viewer] = [await createUser(t), await createUser(t)];
    const ws = (await createWorkspace(t, owner)).uuid;
    await join(t, logged, ws, owner, viewer, 'viewer');
    const headers = { [WORKSPACE_HEADER]: ws };
    const agent = (await call(t.app, 'POST', '/agent', { token: owner.token, headers, body: { name: 'a' } })).json()
      .uuid as string;
    const s = await stream({ authorization: `Bearer ${viewer.token}`, ...headers }, agent);
    const submitted = await call(t.app, 'POST', `/agent/request/${agent}`, {
      token: owner.token,
      headers,
      body: { message: 'hi' },
    });
    const taskId = submitted.json().task_id as string;
    expect((await s.take(1))[0]?.data).toMatchObject({ task_id: taskId, status: 'queued' });

    const removed = await call(t.app, 'DELETE', `/agent/${agent}`, { token: owner.token, headers });
    expect(removed.statusCode).toBeLessThan(300);
    const rest = await s.events.rest();
    expect(rest.map((e) => [e.data.task_id, e.data.status])).toEqual([[taskId, 'cancelled']]);
  });
});

/** Whether a PostgreSQL session of this database waits for a lock while counting an agent's events. */
async function waitsOnCounter(t: TestApp): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock' and query like '%agent_event_seqs%'`.execute(
    t.runtime.db.kysely,
  );
  return (rows[0]?.n ?? 0) > 0;
}

// Two instances need one shared database: PostgreSQL (with Redis for the rate limit when it is there).
describe.runIf(POSTGRES_URL).each(POSTGRES_ONLY)(
  'the agent-wide task stream across two instances ($name)',
  (shared) => {
    let a: TestApp;
    let b: TestApp;
    let baseB: string;
    const closers: Array<() => void> = [];

    beforeAll(async () => {
      const redisUrl = process.env.TEST_REDIS_URL;
      const config = redisUrl ? { redisUrl } : {};
      a = await buildTestApp(shared, { config });
      b = await buildTestApp(shared, { config });
      baseB = await listen(b);
    });
    afterAll(async () => {
      for (const close of closers) close();
      await a.close();
      await b.close();
    });

    it('follows on one instance the changes made on the other, and ends when the other deletes the agent', async () => {
      const user = await createUser(a);
      const agent = (await createAgent(a, user)).uuid;
      const { res, close } = await openAgentStream(baseB, agent, { 'x-api-key': user.key });
      closers.push(close);
      expect(res.status).toBe(200);
      const events = sseReader(res.body as ReadableStream<Uint8Array>);

      const taskId = (await submitTask(a, user, agent, { message: 'elsewhere' })).task_id;
      const claim = await claimOne(a, user, agent);
      await reportComplete(a, user, agent, taskId, claim.lease_id, { summary: 'done' });
      const seen: SseEvent[] = [];
      while (seen.at(-1)?.data.status !== 'completed') {
        const event = await events.next();
        if (!event) throw new Error('the stream ended early');
        seen.push(event);
      }
      expect(seen.map((e) => e.data.status)).toEqual(['queued', 'running', 'completed']);
      expectIncreasing(seen);
      expect(seen.at(-1)?.data).toEqual(await getTask(b, user, agent, taskId));

      expect((await call(a.app, 'DELETE', `/agent/${agent}`, { token: user.token })).statusCode).toBeLessThan(300);
      expect(await events.rest()).toEqual([]);
    });
  },
);

function progressOf(step: number) {
  return { current_step: `step ${step}`, steps_completed: step, total_steps: 3 };
}
