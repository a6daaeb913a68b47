import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Executor } from '../../../src/db/connect.js';
import { fromDbJson } from '../../../src/db/json.js';
import SqliteDatabase from '../../../src/db/sqlite-driver.js';
import { AppError } from '../../../src/http/errors.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { createTaskWriter, type TaskChangeEvent } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { type Change, type TaskInput, transition } from '../../../src/modules/tasks/lifecycle/transition-fns.js';
import { PG_TYPES, type TaskRecord } from '../../../src/modules/tasks/tasks-record.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { sqlitePlans } from '../../helpers/query-plans.js';
import { type ClaimedTask, claimTasks, submitTask, workerHeaders } from '../../helpers/tasks.js';

/*
 * A claim of many tasks and a batch complete write their tasks together (saveMany: a few
 * set-based statements). What they store, tell and announce must be exactly what saving the same
 * changes one at a time does: each check below runs both ways on twin tasks and compares.
 */

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
const TRACEPARENT = /00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]/g;

/** `value` as JSON with the tasks' ids replaced by their index, other ids and times by placeholders. */
function normalise(value: unknown, tasks: string[]): unknown {
  const text = JSON.stringify(value)
    .replace(UUID, (id) => (tasks.includes(id) ? `task#${tasks.indexOf(id)}` : 'id'))
    .replace(TIME, 'time')
    .replace(TRACEPARENT, 'traceparent');
  return JSON.parse(text);
}

/** Every row the tasks wrote: the tasks, their events in seq order, their callbacks' outbox rows. */
async function stored(ex: Executor, tasks: string[]) {
  const rows = await ex.selectFrom('tasks').selectAll().where('uuid', 'in', tasks).execute();
  const events = await ex.selectFrom('task_events').selectAll().where('task_uuid', 'in', tasks).execute();
  const callbacks = await ex
    .selectFrom('callbacks')
    // Not the delivery state: the sender may already be trying them.
    .select(['task_uuid', 'event_type', 'url', 'payload'])
    .where('task_uuid', 'in', tasks)
    .execute();
  expect(agentNumbering(events)).toEqual({ contiguous: true, inTaskOrder: true });
  const at = (uuid: string) => tasks.indexOf(uuid);
  const json = <T extends Record<string, unknown>>(row: T, columns: string[]) =>
    Object.fromEntries(Object.entries(row).map(([k, v]) => [k, columns.includes(k) && v !== null ? fromDbJson(v) : v]));
  return normalise(
    {
      tasks: rows
        .sort((a, b) => at(a.uuid) - at(b.uuid))
        .map((r) =>
          json({ ...r, ready: Boolean(r.ready) }, [
            'messages',
            'metadata',
            'progress',
            'input_request',
            'result',
            'error',
          ]),
        ),
      // Numbered in the agent's stream in the order the changes were saved, which the two ways
      // differ in (a batch saves in lock order): checked apart, by `agentNumbering`.
      events: events
        .sort((a, b) => at(a.task_uuid) - at(b.task_uuid) || a.seq - b.seq)
        .map(({ agent_seq: _, ...r }) => json(r, ['data'])),
      callbacks: callbacks
        .map((r) => json(r, ['payload']))
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    },
    tasks,
  );
}

/**
 * Whether the agents' stream numbers of `events` are right whatever order the changes were saved
 * in: each agent's are 1, 2, 3… without a gap or a repeat, and each task's follow its own order.
 */
function agentNumbering(
  events: Array<{ task_uuid: string; seq: number; agent_uuid: string | null; agent_seq: unknown }>,
) {
  const byAgent = new Map<string, number[]>();
  for (const e of events)
    byAgent.set(String(e.agent_uuid), [...(byAgent.get(String(e.agent_uuid)) ?? []), Number(e.agent_seq)]);
  const contiguous = [...byAgent.values()].every((seqs) => seqs.sort((a, b) => a - b).every((seq, i) => seq === i + 1));
  const inTaskOrder = events.every((e) =>
    events.every(
      (o) => o.task_uuid !== e.task_uuid || o.seq < e.seq === Number(o.agent_seq) < Number(e.agent_seq) || o === e,
    ),
  );
  return { contiguous, inTaskOrder };
}

describe.each(DATABASES)('batch writes on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database, { config: { allowPrivateUrls: true } });
  });
  afterAll(() => t.close());

  /** An agent with `n` queued tasks, every other one announcing to a webhook. */
  async function agentWithTasks(user: TestUser, n: number) {
    const agent = (await createAgent(t, user, { concurrency: 100 })).uuid;
    const tasks: string[] = [];
    for (let i = 0; i < n; i++) {
      const hook = i % 2 === 0 ? { callback_mode: 'webhook', webhook_url: 'http://127.0.0.1:9/hook' } : {};
      tasks.push((await submitTask(t, user, agent, { message: `task ${i}`, ...hook })).task_id);
    }
    return { agent, tasks };
  }

  const post = (user: TestUser, url: string, body: unknown) =>
    call(t.app, 'POST', url, { headers: workerHeaders(user), body });

  it('a claim of many and a batch complete store the same rows, events and callbacks as one at a time', async () => {
    const user = await createUser(t);
    const batch = await agentWithTasks(user, 8);
    const single = await agentWithTasks(user, 8);

    // Task 0 of each has asked a question and been answered: running again, ready, and its
    // re-claim changes nothing a reader sees (no event), so the claim below mixes two column sets.
    for (const { agent, tasks } of [batch, single]) {
      const [first] = await claimTasks(t, user, agent);
      expect(first?.task_id).toBe(tasks[0]);
      const asked = await post(user, `/agent/${agent}/task/${tasks[0]}/input_request`, {
        lease_id: first?.lease_id,
        message: 'which branch?',
      });
      expect(asked.statusCode).toBe(200);
      const answered = await post(user, `/agent/${agent}/task/${tasks[0]}/message`, { message: 'main' });
      expect(answered.statusCode).toBe(200);
    }

    const claimedBatch = await claimTasks(t, user, batch.agent, { max_tasks: 8 });
    const claimedSingle: ClaimedTask[] = [];
    for (let i = 0; i < 8; i++) claimedSingle.push(...(await claimTasks(t, user, single.agent, { max_tasks: 1 })));
    expect(claimedBatch).toHaveLength(8);
    expect(normalise(claimedBatch, batch.tasks)).toEqual(normalise(claimedSingle, single.tasks));
    expect(await stored(t.runtime.db.kysely, batch.tasks)).toEqual(await stored(t.runtime.db.kysely, single.tasks));

    // Task 6 is cancelled and task 7 reported under a stale lease: both refused; the rest complete.
    const items = (claimed: ClaimedTask[], ids: string[]) =>
      ids.map((id, i) => {
        const lease = claimed.find((c) => c.task_id === id)?.lease_id;
        return { task_id: id, lease_id: i === 7 ? 'stale' : lease, result: { summary: `done ${i}`, findings: [] } };
      });
    const cancel = (agent: string, id: string | undefined) =>
      call(t.app, 'POST', `/agent/${agent}/task/${id}/cancel`, { headers: workerHeaders(user) });
    expect((await cancel(batch.agent, batch.tasks[6])).statusCode).toBe(200);
    expect((await cancel(single.agent, single.tasks[6])).statusCode).toBe(200);

    const res = await post(user, `/agent/${batch.agent}/tasks/complete`, {
      tasks: items(claimedBatch, batch.tasks).reverse(),
    });
    expect(res.statusCode).toBe(200);
    const outcomes = [];
    for (const item of items(claimedSingle, single.tasks).reverse()) {
      const { task_id, ...body } = item;
      const one = await post(user, `/agent/${single.agent}/task/${task_id}/complete`, body);
      outcomes.push(one.statusCode === 200 ? { task_id, status: 'completed' } : { task_id, status: 'refused' });
    }
    expect(
      normalise(
        res.json().results.map(({ error: _, ...r }: { error?: unknown }) => r),
        batch.tasks,
      ),
    ).toEqual(normalise(outcomes, single.tasks));
    expect(res.json().results.filter((r: { status: string }) => r.status === 'refused')).toHaveLength(2);
    expect(await stored(t.runtime.db.kysely, batch.tasks)).toEqual(await stored(t.runtime.db.kysely, single.tasks));
  });

  it('saveMany of mixed changes tells, stores and announces what save does one change at a time', async () => {
    const user = await createUser(t);
    const runs = [];
    for (const together of [true, false]) {
      const { agent, tasks } = await agentWithTasks(user, 7);
      const notifier = createNotifier({ log: { warn: () => undefined } });
      const events = createEventHub();
      const writer = createTaskWriter({ repo: tasksRepo, notifier, events });
      const label = (uuid: string) => (uuid === agent ? 'agent' : `task#${tasks.indexOf(uuid)}`);
      const told: unknown[] = [];
      const published: string[] = [];
      const listen = (kind: string) => async (event: TaskChangeEvent) => {
        // Inside the transaction the row already holds the change being told.
        const row = await tasksRepo.findTask(event.trx, {
          workspaceUuid: user.uuid,
          agentUuid: agent,
          taskUuid: event.task.uuid,
        });
        told.push([kind, event.operation, label(event.task.uuid), event.before?.status, row?.status, row?.seq]);
      };
      events.on('task:statusChanged', listen('status'));
      events.on('task:changed', listen('any'));
      notifier.subscribe('work', agent, () => published.push('work:agent'));
      for (const id of tasks) notifier.subscribe('task', id, () => published.push(`task:${label(id)}`));

      /** Applies one input per task, with one saveMany or one save each. */
      const apply = (inputs: Array<(task: TaskRecord) => TaskInput>, nowMs: number) =>
        t.runtime.db.transaction(async (trx) => {
          const changes: Array<{ before: TaskRecord; change: Change }> = [];
          for (const [i, id] of tasks.entries()) {
            const input = inputs[i];
            if (!input) continue;
            const before = (await tasksRepo.lockTask(trx, {
              workspaceUuid: user.uuid,
              agentUuid: agent,
              taskUuid: id,
            })) as TaskRecord;
            const change = transition(before, input(before), nowMs);
            if (!change || change instanceof AppError) throw new Error(`task ${i}: no change`);
            changes.push({ before, change });
          }
          if (together) return writer.saveMany(trx, changes);
          const out = [];
          for (const { before, change } of changes) out.push(await writer.save(trx, before, change));
          return out;
        });

      const now = Date.now();
      const claim = () => ({ op: 'claim', leaseId: 'lease-1', leaseSeconds: 30, workerId: 'w' }) as const;
      await apply(
        Array.from({ length: 7 }, () => claim),
        now,
      );
      const progress = { current_step: 'reading', steps_completed: 1, total_steps: 3 };
      // Seven kinds of change, each writing its own set of columns; two (renew, the same progress
      // again) change nothing a reader sees, so they have no event.
      await apply([(() => ({ op: 'progress', leaseId: 'lease-1', progress })) as () => TaskInput], now + 1);
      const saved = await apply(
        [
          () => ({ op: 'progress', leaseId: 'lease-1', progress }),
          () => ({ op: 'complete', leaseId: 'lease-1', result: { summary: 'ok', findings: [] } }),
          () => ({ op: 'fail', leaseId: 'lease-1', error: { message: 'flaky' }, retryable: true }),
          () => ({ op: 'fail', leaseId: 'lease-1', error: { code: 'BROKEN', message: 'no' }, retryable: false }),
          () => ({ op: 'input_request', leaseId: 'lease-1', message: 'which branch?' }),
          () => ({ op: 'release', leaseId: 'lease-1' }),
          () => ({ op: 'renew', leaseId: 'lease-1', leaseSeconds: 90 }),
        ],
        now + 2,
      );
      runs.push({
        saved: normalise(saved, tasks),
        told: normalise(told, tasks),
        published,
        stored: await stored(t.runtime.db.kysely, tasks),
      });
      await notifier.close();
    }
    const [together, oneByOne] = runs;
    expect(together?.published.length).toBeGreaterThan(0);
    expect(together).toEqual(oneByOne);
  });
});

/**
 * The statements sent to the database while `fn` runs (pg's client, better-sqlite3's statements)
 * that read under lock or write a task or its events: what a claim or complete costs per task.
 * Installed before any app connects: the pool binds each client's query method when it connects.
 */
let counting: string[] | null = null;
const record = (text: string) => {
  if (
    counting &&
    /^(select \* from "tasks"|update "tasks"|with "?v"?\(|with c as \(insert into agent_event_seqs|insert into "(task_events|agent_event_seqs)")/i.test(
      text,
    )
  )
    counting.push(text);
};
const pgQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
  record(typeof config === 'string' ? config : String((config as { text?: string }).text));
  return (pgQuery as (...args: unknown[]) => unknown).call(this, config, ...rest);
} as typeof pgQuery;
type Method = (this: { source: string }, ...args: unknown[]) => unknown;
const statement: Record<string, Method> = Object.getPrototypeOf(new SqliteDatabase(':memory:').prepare('select 1'));
for (const method of ['all', 'get', 'run', 'iterate']) {
  const original = statement[method] as Method;
  statement[method] = function (this: { source: string }, ...args: unknown[]) {
    record(this.source);
    return original.apply(this, args);
  };
}

async function taskStatements(fn: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  counting = seen;
  try {
    await fn();
  } finally {
    counting = null;
  }
  return seen;
}

describe.each(DATABASES)('batch write statements on $name', (database) => {
  let t: TestApp;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    // Storage of its own: no other file's work for this app's sweeper to write while counting.
    const own = await ownDatabase(database);
    drop = own.drop;
    t = await buildTestApp(own.database);
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  it.runIf(database.name === 'postgres')('PG_TYPES names the type of every tasks column that is not text', async () => {
    const { rows } = await sql<{ column_name: string; data_type: string }>`select column_name, data_type
      from information_schema.columns where table_schema = current_schema() and table_name = 'tasks'`.execute(
      t.runtime.db.kysely,
    );
    const notText = rows.filter((r) => r.data_type !== 'text').map((r) => [r.column_name, r.data_type]);
    expect(Object.fromEntries(notText)).toEqual(PG_TYPES);
  });

  it('a claim and a batch complete send the same few statements for 5 tasks as for 50', async () => {
    const user = await createUser(t);
    const costs = [];
    for (const n of [5, 50]) {
      const agent = (await createAgent(t, user, { concurrency: 100 })).uuid;
      for (let i = 0; i < n; i++) await submitTask(t, user, agent, { message: `task ${i}` });
      let claimed: ClaimedTask[] = [];
      const claim = await taskStatements(async () => {
        claimed = await claimTasks(t, user, agent, { max_tasks: n });
      });
      expect(claimed).toHaveLength(n);
      let results: Array<{ status: string }> = [];
      const complete = await taskStatements(async () => {
        const res = await call(t.app, 'POST', `/agent/${agent}/tasks/complete`, {
          headers: workerHeaders(user),
          body: {
            tasks: claimed.map((c) => ({
              task_id: c.task_id,
              lease_id: c.lease_id,
              result: { summary: 'ok', findings: [] },
            })),
          },
        });
        results = res.json().results;
      });
      expect(results.filter((r) => r.status === 'completed')).toHaveLength(n);
      costs.push({ claim: claim.length, complete: complete.length });
    }
    // One locking read, one UPDATE of all the rows, one INSERT of all the events with the agent's
    // event counter (in the same statement on PostgreSQL; SQLite counts in one more, in-process).
    const n = database.name === 'postgres' ? 3 : 4;
    expect(costs).toEqual([
      { claim: n, complete: n },
      { claim: n, complete: n },
    ]);
  });

  // Without statistics SQLite's planner would pick an index on the agent over the primary key
  // for `uuid in (…) and agent_uuid = ?`, reading every task the agent ever had: a batch complete
  // then grows with the agent's history. Every statement of a claim and a complete must find its
  // tasks by key (the claim: through the indexes of ready and of held tasks). The planner's choice
  // depends on the number of ids (5 took the key, 20 the agent's index), hence 30.
  it.runIf(database.name === 'sqlite')(
    "a claim and a batch complete never walk all of an agent's tasks (query plans)",
    async () => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user, { concurrency: 100 })).uuid;
      for (let i = 0; i < 30; i++) await submitTask(t, user, agent, { message: `task ${i}` });
      // Only the claim's and complete's own statements: the sweeper's run on their own timer.
      const plans = await sqlitePlans(t, /^(select \* from "tasks"|update "tasks"|with "?v"?\()/i, async () => {
        const claimed = await claimTasks(t, user, agent, { max_tasks: 30 });
        const res = await call(t.app, 'POST', `/agent/${agent}/tasks/complete`, {
          headers: workerHeaders(user),
          body: {
            tasks: claimed.map((c) => ({ task_id: c.task_id, lease_id: c.lease_id, result: { summary: 'ok' } })),
          },
        });
        expect(res.json().results.map((r: { status: string }) => r.status)).toEqual(Array(30).fill('completed'));
      });
      const steps = plans.flatMap((p) => p.steps).filter((step) => /^(SEARCH|SCAN) tasks\b/.test(step));
      expect(steps.length).toBeGreaterThanOrEqual(3);
      for (const step of steps) {
        expect(step).toMatch(
          /USING (COVERING )?INDEX (sqlite_autoindex_tasks_1 \(uuid=\?\)|tasks_claim_idx |tasks_held_idx )/,
        );
      }
    },
  );
});
