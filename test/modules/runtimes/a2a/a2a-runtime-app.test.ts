import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type A2aAgent, startA2aAgent } from '../../../helpers/a2a-agent.js';
import { buildTestApp, call, type TestApp } from '../../../helpers/app.js';
import { DATABASES, ownDatabase } from '../../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../../helpers/factories.js';
import { cancelTask, sendMessage, submitTask, waitForStatus } from '../../../helpers/tasks.js';

// The same task API drives a remote A2A agent: the app's own dispatcher pushes each task to the
// agent (storage of its own, so no other test file's dispatcher takes these tasks).
describe.each(DATABASES)('an agent whose runtime is a remote A2A agent, through the app ($name)', (shared) => {
  let t: TestApp;
  let remote: A2aAgent;
  let user: TestUser;
  let agent: string;
  let drop: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    remote = await startA2aAgent({ binding: 'JSONRPC', streaming: false });
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 100 } });
    user = await createUser(t);
    agent = (
      await createAgent(t, user, {
        name: 'remote',
        runtime: { type: 'a2a', agent_card_url: remote.cardUrl, headers: { 'X-Remote-Key': 'k-123' } },
      })
    ).uuid;
  });
  afterAll(async () => {
    await t?.close();
    await remote?.close();
    await drop();
  });

  it('completes with the remote task’s result, its headers sent and masked when read', async () => {
    const { task_id } = await submitTask(t, user, agent, { message: 'text hello there' });
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result).toMatchObject({ summary: 'echo: text hello there', findings: [] });
    const sent = remote.requests.find((r) => r.method === 'POST');
    expect(sent?.headers['x-remote-key']).toBe('k-123');
    const read = await call(t.app, 'GET', `/agent/${agent}`, { headers: { 'x-api-key': user.key } });
    expect(read.json().runtime).toEqual({
      type: 'a2a',
      agent_card_url: remote.cardUrl,
      headers: { 'X-Remote-Key': '********' },
    });
  });

  it('asks for input, and the reply continues the same remote task to completion', async () => {
    const { task_id } = await submitTask(t, user, agent, { message: 'ask' });
    const waiting = await waitForStatus(t, user, agent, task_id, 'awaiting_input');
    expect(waiting.input_request?.message).toBe('Which branch?');
    expect((await sendMessage(t, user, agent, task_id, 'main')).statusCode).toBe(200);
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('reply: main');
    const turns = remote.received.filter((r) => r.texts.includes('ask') || r.texts.includes('main'));
    expect(turns.map((r) => r.continued)).toEqual([false, true]);
    expect(new Set(turns.map((r) => r.taskId)).size).toBe(1);
  });

  it('a reply is not answered by the old question of a remote task that re-sends itself first', async () => {
    const { task_id } = await submitTask(t, user, agent, { message: 'ask-resend' });
    await waitForStatus(t, user, agent, task_id, 'awaiting_input');
    expect((await sendMessage(t, user, agent, task_id, 'main')).statusCode).toBe(200);
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('reply: main');
    expect(done.messages?.map((m) => m.role)).toEqual(['user', 'agent', 'user']);
  });

  it('fails with AGENT_ERROR when the remote fails, and a cancel is forwarded', async () => {
    const failed = await submitTask(t, user, agent, { message: 'fail' });
    const f = await waitForStatus(t, user, agent, failed.task_id, 'failed');
    expect(f.error?.code).toBe('AGENT_ERROR');

    const long = await submitTask(t, user, agent, { message: 'wait' });
    // Cancelled once the remote task's id is stored (before that there is no remote task to cancel).
    await expect
      .poll(
        async () =>
          (
            await t.runtime.db.kysely
              .selectFrom('push_runs')
              .select('state')
              .where('task_uuid', '=', long.task_id)
              .executeTakeFirst()
          )?.state ?? null,
        { timeout: 10_000 },
      )
      .not.toBeNull();
    expect((await cancelTask(t, user, agent, long.task_id)).statusCode).toBe(200);
    await waitForStatus(t, user, agent, long.task_id, 'cancelled');
    await expect.poll(() => remote.cancelled.length, { timeout: 10_000 }).toBeGreaterThan(0);
  });
});
