import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { cancelTask, claimTasks, getTask, submitTask, workerHeaders } from '../../helpers/tasks.js';

const result = (n: number) => ({ summary: `done ${n}`, findings: [] });

describe.each(DATABASES)('batch complete on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('completes many tasks in one request; a refused one changes nothing and stops none of the others', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 100 })).uuid;
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await submitTask(t, user, agent, { message: `task ${i}` })).task_id);
    const claimed = await claimTasks(t, user, agent, { max_tasks: 5 });
    expect(claimed).toHaveLength(5);
    const at = (i: number) => {
      const task = claimed[i];
      if (!task) throw new Error(`no task ${i}`);
      return task;
    };
    const [a, b, c, d, e] = [at(0), at(1), at(2), at(3), at(4)];
    await cancelTask(t, user, agent, d.task_id);
    const unknown = '0190f0f0-0000-7000-8000-000000000000';

    const res = await call(t.app, 'POST', `/agent/${agent}/tasks/complete`, {
      headers: workerHeaders(user),
      body: {
        tasks: [
          { task_id: a.task_id, lease_id: a.lease_id, result: result(1) },
          { task_id: b.task_id, lease_id: 'not-the-lease', result: result(2) },
          { task_id: unknown, lease_id: 'x', result: result(3) },
          { task_id: c.task_id, lease_id: c.lease_id, result: result(4) },
          { task_id: d.task_id, lease_id: d.lease_id, result: result(5) },
        ],
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().results).toEqual([
      { task_id: a.task_id, status: 'completed' },
      { task_id: b.task_id, status: 'refused', error: { code: 'TASK_NOT_RUNNING', message: expect.any(String) } },
      { task_id: unknown, status: 'refused', error: { code: 'NOT_FOUND', message: 'Task not found' } },
      { task_id: c.task_id, status: 'completed' },
      { task_id: d.task_id, status: 'refused', error: { code: 'TASK_NOT_RUNNING', message: expect.any(String) } },
    ]);
    expect(await getTask(t, user, agent, a.task_id)).toMatchObject({ status: 'completed', result: result(1) });
    expect(await getTask(t, user, agent, c.task_id)).toMatchObject({ status: 'completed', result: result(4) });
    expect(await getTask(t, user, agent, b.task_id)).toMatchObject({ status: 'running' });
    expect(await getTask(t, user, agent, d.task_id)).toMatchObject({ status: 'cancelled' });
    expect((await getTask(t, user, agent, e.task_id)).status).toBe('running');
  });

  it('answers 404 for another user’s agent and 400 for a task listed twice or an empty or oversized batch', async () => {
    const owner = await createUser(t);
    const stranger = await createUser(t);
    const agent = (await createAgent(t, owner)).uuid;
    const task = (await submitTask(t, owner, agent)).task_id;
    const [claimed] = await claimTasks(t, owner, agent);
    const item = { task_id: task, lease_id: claimed?.lease_id, result: result(0) };
    const post = (user: typeof owner, tasks: unknown[]) =>
      call(t.app, 'POST', `/agent/${agent}/tasks/complete`, { headers: workerHeaders(user), body: { tasks } });

    const foreign = await post(stranger, [item]);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('NOT_FOUND');
    const twice = await post(owner, [item, item]);
    expect(twice.statusCode).toBe(400);
    expect(twice.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'tasks' } });
    expect((await post(owner, [])).statusCode).toBe(400);
    expect(
      (
        await post(
          owner,
          Array.from({ length: 101 }, () => item),
        )
      ).statusCode,
    ).toBe(400);
    // Nothing above changed the task.
    expect((await getTask(t, owner, agent, task)).status).toBe('running');
    expect((await post(owner, [item])).json().results).toEqual([{ task_id: task, status: 'completed' }]);
  });
});
