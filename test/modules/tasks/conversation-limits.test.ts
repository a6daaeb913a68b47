import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { claimOne, getTask, reportInputRequest, sendMessage, submitTask } from '../../helpers/tasks.js';

describe.each(DATABASES)('conversation limits on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('refuses the 201st message with 400 LIMIT_EXCEEDED and writes nothing', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const { task_id } = await submitTask(t, user, agent.uuid, { message: 'start' });
    for (let i = 1; i < 200; i++) {
      const res = await sendMessage(t, user, agent.uuid, task_id, `message ${i}`);
      expect(res.statusCode, res.body).toBe(200);
    }
    const before = await getTask(t, user, agent.uuid, task_id);
    expect(before.messages).toHaveLength(200);
    const res = await sendMessage(t, user, agent.uuid, task_id, 'one too many');
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { field: 'message' } });
    const after = await getTask(t, user, agent.uuid, task_id);
    expect(after).toEqual(before);

    // An agent's question counts too: the worker's input request is refused the same way.
    const claimed = await claimOne(t, user, agent.uuid);
    const asked = await reportInputRequest(t, user, agent.uuid, task_id, claimed.lease_id, 'which branch?');
    expect(asked.statusCode).toBe(400);
    expect(asked.json().error.code).toBe('LIMIT_EXCEEDED');
    expect((await getTask(t, user, agent.uuid, task_id)).status).toBe('running');
  });

  it('refuses a message that takes the conversation past 2,000,000 characters', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user);
    const big = 'x'.repeat(100_000);
    const { task_id } = await submitTask(t, user, agent.uuid, { message: big });
    for (let i = 1; i < 20; i++) {
      const res = await sendMessage(t, user, agent.uuid, task_id, big);
      expect(res.statusCode, res.body).toBe(200);
    }
    const res = await sendMessage(t, user, agent.uuid, task_id, 'y');
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { field: 'message' } });
    expect((await getTask(t, user, agent.uuid, task_id)).messages).toHaveLength(20);
  });
});
