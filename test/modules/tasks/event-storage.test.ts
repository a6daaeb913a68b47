import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { cancelTask, getTask, sendMessage, submitTask, type TaskView } from '../../helpers/tasks.js';

const TEXT = 'x'.repeat(1_000);

describe.each(DATABASES)('task event storage on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  let agent: string;

  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
    agent = (await createAgent(t, user)).uuid;
  });
  afterAll(() => t.close());

  /** A queued task whose conversation has `count` messages of 1,000 characters. */
  async function taskWith(count: number): Promise<string> {
    const { task_id } = await submitTask(t, user, agent, { message: TEXT });
    for (let i = 1; i < count; i++) {
      const res = await sendMessage(t, user, agent, task_id, TEXT);
      expect(res.statusCode, res.body).toBe(200);
    }
    return task_id;
  }

  /** Bytes of JSON stored for a task: its conversation column and every event row. */
  async function bytesStored(taskId: string): Promise<number> {
    const db = t.runtime.db.kysely;
    const size = database.name === 'postgres' ? sql`octet_length(data::text)` : sql`length(cast(data as blob))`;
    const events = await sql<{
      n: number | string | null;
    }>`select sum(${size}) as n from task_events where task_uuid = ${taskId}`.execute(db);
    const messages =
      database.name === 'postgres' ? sql`octet_length(messages::text)` : sql`length(cast(messages as blob))`;
    const task = await sql<{ n: number | string }>`select ${messages} as n from tasks where uuid = ${taskId}`.execute(
      db,
    );
    return Number(events.rows[0]?.n ?? 0) + Number(task.rows[0]?.n);
  }

  it('grows linearly with the conversation: 200 messages store about twice what 100 do', async () => {
    const hundred = await bytesStored(await taskWith(100));
    const twoHundred = await bytesStored(await taskWith(200));
    // A full copy of the conversation per event would make this about 4.
    const ratio = twoHundred / hundred;
    expect(ratio).toBeGreaterThan(1.8);
    expect(ratio).toBeLessThan(2.2);
    // Each of the 200 messages is stored about once (the conversation column), plus small event rows
    // (each carries the task body without its conversation: about 0.6 KB as PostgreSQL's jsonb text
    // since §22.1's fields; a copy of the conversation per event would be about 100 KB each).
    expect(twoHundred).toBeLessThan(200 * TEXT.length * 1.75);
  });

  it('a stream resumed from the first event replays every event with its conversation then, page after page', async () => {
    const taskId = await taskWith(150);
    await cancelTask(t, user, agent, taskId);
    const final = await getTask(t, user, agent, taskId);
    const res = await call(t.app, 'GET', `/agent/${agent}/task/${taskId}/events`, {
      headers: { 'x-api-key': user.key, 'last-event-id': '1' },
    });
    expect(res.statusCode).toBe(200);
    const events = res.body
      .split('\n\n')
      .filter((frame) => frame.startsWith('id: '))
      .map((frame) => {
        const [id, , data] = frame.split('\n');
        return { id: Number(id?.slice(4)), data: JSON.parse((data ?? '').slice(6)) as TaskView };
      });
    // Events 2…150 are the 149 messages after the first, then the cancellation: more than a page.
    expect(events.map((e) => e.id)).toEqual(Array.from({ length: 150 }, (_, i) => i + 2));
    for (const [i, event] of events.slice(0, -1).entries()) {
      expect(event.data.status).toBe('queued');
      expect(event.data.message).toBe(TEXT);
      expect(event.data.messages).toEqual(final.messages.slice(0, i + 2));
      expect(Object.keys(event.data).slice(0, 8)).toEqual([
        'task_id',
        'status',
        'created_at',
        'agent_uuid',
        'message',
        'messages',
        'priority',
        'metadata',
      ]);
    }
    expect(events.at(-1)?.data).toEqual(final);
  });
});
